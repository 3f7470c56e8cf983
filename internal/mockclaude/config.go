package mockclaude

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by ConfigFromEnv (and so by Main).
const (
	// EnvScenario names the scenario; empty means "demo".
	EnvScenario = "TETHER_MOCK_SCENARIO"
	// EnvDelayMS is the pause between streamed chunks, in milliseconds.
	EnvDelayMS = "TETHER_MOCK_DELAY_MS"
	// EnvN is the number of assistant messages per turn in the "text" scenario.
	EnvN = "TETHER_MOCK_N"
	// EnvSize is a text size in bytes ("text": per message, "huge-line": the
	// one line). Accepts a K, M or G suffix (binary units), e.g. "50M".
	EnvSize = "TETHER_MOCK_SIZE"
	// EnvToolArgs is the JSON object passed as tools/call arguments in the
	// "mcp" scenario; default {}.
	EnvToolArgs = "TETHER_MOCK_TOOL_ARGS"
	// EnvMain is the convention for test binaries that re-execute themselves
	// as the mock: a TestMain that sees EnvMain=1 calls os.Exit(Main()).
	EnvMain = "TETHER_MOCKCLAUDE_MAIN"
)

// Config chooses what one mock process does.
type Config struct {
	// Scenario names the behaviour; empty means "demo". See the package
	// documentation for the list.
	Scenario string
	// Args is the CLI argv after the program name. The flags the SDKs pass
	// are understood (--output-format, --input-format, --verbose, --model,
	// --permission-prompt-tool, --include-partial-messages, --resume,
	// --session-id, --permission-mode, --mcp-config, -p, -v); anything else
	// is ignored without error.
	Args []string
	// Cwd is the working directory the mock reports and writes files in;
	// empty means the process's working directory.
	Cwd string
	// Delay is the pause between streamed chunks (0 in tests; "slow" uses
	// 50ms when it is 0).
	Delay time.Duration
	// Now is the clock for durations, timestamps and the id seed; nil means
	// time.Now.
	Now func() time.Time
	// N is the number of assistant messages per turn in "text" (0 means 1).
	N int
	// Size is the text size in bytes for "text" and "huge-line" (0 means the
	// scenario's default).
	Size int64
	// ToolArgs is the JSON object used as tools/call arguments in "mcp"
	// (empty means {}).
	ToolArgs string
	// CloseStdout, when set, closes the real stdout; the "close-stdout"
	// scenario calls it at stdin EOF. Main sets it to os.Stdout.Close.
	CloseStdout func() error
	// Problems lists environment values ConfigFromEnv could not parse. Run
	// reports them on stderr and exits 2 instead of guessing.
	Problems []string
}

// ConfigFromEnv builds a Config from argv (after the program name) and the
// TETHER_MOCK_* variables read through getenv, so tests can choose the
// behaviour of a subprocess through its environment. Cwd, Now and
// CloseStdout are left for the caller.
func ConfigFromEnv(args []string, getenv func(string) string) Config {
	cfg := Config{Scenario: strings.TrimSpace(getenv(EnvScenario)), Args: args}
	if v := strings.TrimSpace(getenv(EnvDelayMS)); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			cfg.Problems = append(cfg.Problems, fmt.Sprintf("%s=%q is not a number of milliseconds", EnvDelayMS, v))
		} else {
			cfg.Delay = time.Duration(ms) * time.Millisecond
		}
	}
	if v := strings.TrimSpace(getenv(EnvN)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			cfg.Problems = append(cfg.Problems, fmt.Sprintf("%s=%q is not a count", EnvN, v))
		} else {
			cfg.N = n
		}
	}
	if v := strings.TrimSpace(getenv(EnvSize)); v != "" {
		n, err := parseSize(v)
		if err != nil {
			cfg.Problems = append(cfg.Problems, fmt.Sprintf("%s=%q: %v", EnvSize, v, err))
		} else {
			cfg.Size = n
		}
	}
	cfg.ToolArgs = strings.TrimSpace(getenv(EnvToolArgs))
	return cfg
}

// parseSize reads "123", "64K", "50M", "1G" (also "KB"/"KiB" forms; all
// binary units).
func parseSize(s string) (int64, error) {
	u := strings.ToUpper(s)
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if strings.HasSuffix(u, suf.s) {
			u, mult = strings.TrimSpace(strings.TrimSuffix(u, suf.s)), suf.m
			break
		}
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a byte size")
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("too large")
	}
	return n * mult, nil
}
