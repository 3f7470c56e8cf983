package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// CodexCLIEnv names the variable that overrides where the real codex CLI is.
const CodexCLIEnv = "TETHER_CODEX_CLI"

// CodexModel is the model CodexEnv's config picks: a slug the pinned Codex
// knows, since an unknown one adds an error item to every run's output.
const CodexModel = "gpt-5.5"

// FindCodexCLI returns the pinned real codex CLI: $TETHER_CODEX_CLI, or the
// copy scripts/install-agents puts under .cache/npm. It never falls back to
// PATH, so tests only ever run the version the project pins.
func FindCodexCLI() (string, bool) {
	return findPinnedCLI(CodexCLIEnv, "codex")
}

// RequireCodexCLI returns the real codex CLI or skips the test with the
// reason. Tests that use it are named TestRealCLI*.
func RequireCodexCLI(t testing.TB) string {
	t.Helper()
	p, ok := FindCodexCLI()
	if !ok {
		t.Skipf("real codex CLI not installed (run scripts/install-agents or set %s)", CodexCLIEnv)
	}
	return p
}

// CodexEnv writes home/.codex/config.toml, which points Codex at a fake
// OpenAI Responses API at baseURL (the server's root; "/v1" is appended),
// and returns the whole environment for a run with home as its HOME.
// Nothing is inherited but the path to node, which the npm shim needs, so
// no real key or config can leak in and no traffic leaves loopback.
//
// The config turns off what would reach the network or stall the exit
// (update check, analytics, plugins: about 5 s offline) and every retry, so
// an API error fails the turn at once. TMPDIR is home/tmp: Codex refuses to
// create its sandbox helper under the temporary directory, which is where a
// test's home usually is, and its shell tool then fails.
func CodexEnv(home, baseURL string) ([]string, error) {
	api, err := apiURL(baseURL)
	if err != nil {
		return nil, err
	}
	codexHome := filepath.Join(home, ".codex")
	tmp := filepath.Join(home, "tmp")
	for _, d := range []string{codexHome, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("testenv: codex env: %w", err)
		}
	}
	config := `model = ` + tomlQuote(CodexModel) + `
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake OpenAI"
base_url = ` + tomlQuote(api) + `
wire_api = "responses"
env_key = "OPENAI_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
`
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("testenv: codex env: %w", err)
	}
	return []string{
		"PATH=" + cleanPath(),
		"HOME=" + home,
		"CODEX_HOME=" + codexHome,
		"OPENAI_API_KEY=sk-fake",
		"TMPDIR=" + tmp,
	}, nil
}

// Helpers shared by the Codex and OpenCode environments.

// ErrBaseURL is returned for a base URL that is not a plain http(s) URL.
var ErrBaseURL = errors.New("testenv: base URL must be http(s)://host[:port]")

// apiURL is baseURL with "/v1" appended, once it is known to be a plain
// http(s) URL.
func apiURL(baseURL string) (string, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrBaseURL, baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%w: got %q", ErrBaseURL, baseURL)
	}
	return strings.TrimSuffix(baseURL, "/") + "/v1", nil
}

// tomlQuote is s as a TOML basic string; s holds no control characters (a
// parsed URL or a constant).
func tomlQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// findPinnedCLI finds the pinned CLI name: $envVar, or the copy under
// .cache/npm in the module root.
func findPinnedCLI(envVar, name string) (string, bool) {
	if p := os.Getenv(envVar); p != "" {
		if _, err := exec.LookPath(p); err == nil {
			return p, true
		}
		return "", false
	}
	root, ok := ModuleRoot()
	if !ok {
		return "", false
	}
	p := filepath.Join(root, ".cache", "npm", "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", false
	}
	return p, true
}

// cleanPath is the PATH a CLI run gets: the system directories, and first
// the directory of the node found on the test's PATH, if any, because the
// codex npm shim is a node script.
func cleanPath() string {
	const system = "/usr/local/bin:/usr/bin:/bin"
	node, err := exec.LookPath("node")
	if err != nil {
		return system
	}
	dir, err := filepath.Abs(filepath.Dir(node))
	if err != nil || strings.Contains(":"+system+":", ":"+dir+":") {
		return system
	}
	return dir + ":" + system
}

// groupWaitDelay bounds how long Wait waits for output after the CLI's group
// was killed.
const groupWaitDelay = 5 * time.Second

// GroupCommand is exec.CommandContext for a real CLI run: the CLI starts in a
// process group of its own, and when ctx ends the whole group is killed, so
// what the CLI started (shell commands, helpers) dies with it. Call
// KillGroup after Wait as well, to end anything left behind.
func GroupCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return KillGroup(cmd) }
	cmd.WaitDelay = groupWaitDelay
	return cmd
}

// KillGroup sends SIGKILL to the process group cmd leads. A group that is
// already gone is not an error.
func KillGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("testenv: kill process group %d: %w", cmd.Process.Pid, err)
	}
	return nil
}
