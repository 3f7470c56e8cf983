package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
)

func TestRunAgentMockText(t *testing.T) {
	dir := t.TempDir()
	r := tether(t, dir, "", nil, "run", "--agent", "mock", "hello")
	if r.code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	reply := `Mock reply to turn 1: you said "hello". I noted it in mock-notes.md.`
	for _, want := range []string{"⏺ $ echo \"mock turn 1\"\n", "⏺ Edit mock-notes.md\n  ⎿ add +1 -0\n", "\n" + reply + "\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	summary := regexp.MustCompile(`\n✓ 1 turn · \d+ in / \d+ out · \d+\.\ds · session mock-1-[0-9a-f]{6}\n$`)
	if !summary.MatchString(r.stdout) {
		t.Errorf("no summary line:\n%s", r.stdout)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "mock-notes.md")); err != nil || string(b) != "turn 1: hello\n" {
		t.Errorf("mock-notes.md = %q, %v", b, err)
	}
}

func TestRunAgentMockApproval(t *testing.T) {
	for approve, want := range map[string]string{
		"allow": "The mock_search call was allowed (once).",
		"deny":  "The mock_search call was denied: denied by tether (--approve=deny), so I did not run it.",
	} {
		t.Run(approve, func(t *testing.T) {
			r := tether(t, t.TempDir(), "", nil, "run", "--agent=mock", "--approve="+approve, "go REQUEST_APPROVAL")
			if r.code != 0 || !strings.Contains(r.stdout, want) {
				t.Errorf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// parseEvents decodes every stdout line as a canonical event.
func parseEvents(t *testing.T, stdout string) []agent.Event {
	t.Helper()
	var events []agent.Event
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		e, err := agent.ParseEvent([]byte(l))
		if err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		events = append(events, e)
	}
	return events
}

func TestRunAgentMockJSON(t *testing.T) {
	r := tether(t, t.TempDir(), "", nil, "run", "--agent", "mock", "--json", "--approve=deny", "hi REQUEST_APPROVAL")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit code %d, stderr:\n%s", r.code, r.stderr)
	}
	events := parseEvents(t, r.stdout)
	first, last := events[0], events[len(events)-1]
	if first.Kind != agent.KindSessionStarted || first.Session.Agent != "mock" || last.Kind != agent.KindSessionEnded {
		t.Errorf("first %s, last %s", first.Kind, last.Kind)
	}
	resolved := false
	for _, e := range events {
		if len(e.Raw) == 0 {
			t.Errorf("%s has no raw", e.Kind)
		}
		resolved = resolved || (e.Kind == agent.KindApprovalResolved && e.Resolution.Decision == agent.Deny)
	}
	if !resolved {
		t.Error("no approval.resolved deny")
	}
}

func TestRunAgentMockRaw(t *testing.T) {
	r := tether(t, t.TempDir(), "", nil, "run", "--agent", "mock", "--raw", "hi")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || lines[0] != `{"type":"mock.session.started"}` || lines[len(lines)-1] != `{"type":"mock.session.ended"}` {
		t.Errorf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, l := range lines {
		if _, err := agent.ParseEvent([]byte(l)); err == nil {
			t.Errorf("a raw line is a canonical event: %s", l)
		}
	}
}

func TestRunAgentMockFailedTurn(t *testing.T) {
	r := tether(t, t.TempDir(), "", nil, "run", "--agent", "mock", "FAIL_TURN")
	if r.code != 1 || !strings.Contains(r.stdout, "✗ api_error 500: ") {
		t.Errorf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// The mock keeps its conversations in memory: another process cannot
// resume one, and says so.
func TestRunAgentMockResumeUnknown(t *testing.T) {
	r := tether(t, t.TempDir(), "", nil, "run", "--agent", "mock", "--resume", "mock-1", "again")
	if r.code != 1 || !strings.Contains(r.stderr, "no such conversation: mock-1") {
		t.Errorf("exit code %d\nstderr:\n%s", r.code, r.stderr)
	}
}

// --json for Claude Code (here the mock CLI) prints canonical events,
// each with the CLI's line in raw.
func TestRunClaudeJSONIsCanonical(t *testing.T) {
	dir := t.TempDir()
	r := tether(t, dir, "", nil, "run", "--mock", "--json", "--approve=deny", "hi")
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	events := parseEvents(t, r.stdout)
	seen := map[agent.Kind]int{}
	for _, e := range events {
		seen[e.Kind]++
	}
	if events[0].Kind != agent.KindSessionStarted || events[0].Session.Agent != "claude" || seen[agent.KindTurnCompleted] != 1 ||
		seen[agent.KindApprovalResolved] != 1 || events[len(events)-1].Kind != agent.KindSessionEnded {
		t.Errorf("events: %v\n%s", seen, r.stdout)
	}
	withRaw := 0
	for _, e := range events {
		if len(e.Raw) > 0 {
			withRaw++
		}
	}
	if withRaw < len(events)/2 {
		t.Errorf("%d of %d events carry the CLI's line", withRaw, len(events))
	}
	if _, err := os.Stat(filepath.Join(dir, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("hello.txt exists after --approve=deny (stat: %v)", err)
	}
}

func TestRunAgentUsageErrors(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"unknown agent":     {[]string{"run", "--agent", "gpt", "hi"}, `--agent "gpt" is not one of ` + strings.Join(driver.Names(), ", ")},
		"claude-only flag":  {[]string{"run", "--agent", "mock", "--permission-mode=plan", "hi"}, "--permission-mode is for --agent claude only"},
		"mock with --cli":   {[]string{"run", "--agent", "mock", "--cli=/bin/true", "hi"}, "drop --cli"},
		"json and raw":      {[]string{"run", "--json", "--raw", "hi"}, "give one of them"},
		"mock claude flags": {[]string{"run", "--agent=mock", "--mock", "hi"}, "--mock is for --agent claude only"},
	} {
		t.Run(name, func(t *testing.T) {
			r := tether(t, t.TempDir(), "", nil, c.args...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
				t.Errorf("exit code %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// Ctrl-C (or SIGTERM) interrupts the mock's SLOW turn: the interrupted
// summary, exit 1.
func TestRunAgentMockSignalInterrupts(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			cmd := exec.CommandContext(ctx, tetherPath(), "run", "--agent", "mock", "SLOW")
			cmd.Dir = t.TempDir()
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			out := bufio.NewReader(stdout)
			first, err := out.ReadString('\n') // the turn is under way
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(out)
			_ = cmd.Wait()
			text := first + string(rest)
			if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(text, "\n⏹ interrupted · 1 turn · ") {
				t.Errorf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, text, stderr.String())
			}
		})
	}
}
