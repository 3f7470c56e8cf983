package runview

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/driver/mock"
)

// mockAgentRun prepares a Run through the mock driver, in process.
func mockAgentRun(t *testing.T, d agent.Driver, prompt string) (*Config, *output, *output) {
	t.Helper()
	out, errOut := newOutput(), newOutput()
	cfg := &Config{Driver: d, Start: agent.StartRequest{Workspace: t.TempDir()}, Prompt: prompt,
		Out: out, Err: errOut, Approve: ApproveAllow, Now: stepClock(1500 * time.Millisecond)}
	return cfg, out, errOut
}

func runCfg(t *testing.T, cfg *Config) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	code := Run(ctx, *cfg)
	if ctx.Err() != nil {
		t.Fatalf("Run did not end within %s", waitLimit)
	}
	return code
}

func TestAgentTextTurnStreamsItemsAndSummary(t *testing.T) {
	cfg, out, errOut := mockAgentRun(t, mock.New(mock.Config{}), "hello")
	if code := runCfg(t, cfg); code != ExitOK {
		t.Fatalf("exit code %d\nout:\n%s\nerr:\n%s", code, out, errOut)
	}
	got := out.String()
	reply := `Mock reply to turn 1: you said "hello". I noted it in mock-notes.md.`
	if n := strings.Count(got, reply); n != 1 {
		t.Errorf("the reply appears %d times, want once:\n%s", n, got)
	}
	if !inOrder(got, "⏺ Plan\n", "  ✓ Read the prompt\n", "⏺ $ echo \"mock turn 1\"\n", "  ⎿ mock turn 1\n",
		"⏺ Edit mock-notes.md\n", "  ⎿ add +1 -0\n", "⏺ mock_search: turn 1: hello\n", "  ⎿ 3 mock results\n", "\n"+reply+"\n") {
		t.Errorf("output out of order:\n%s", got)
	}
	summary := regexp.MustCompile(`^✓ 1 turn · \d+ in / \d+ out · 1\.5s · session mock-1-[0-9a-f]{6}$`)
	if l := lines(got); !summary.MatchString(l[len(l)-1]) {
		t.Errorf("summary line = %q", l[len(l)-1])
	}
	if s := errOut.String(); s != "" {
		t.Errorf("stderr = %q", s)
	}
}

func TestAgentApprovalByFlag(t *testing.T) {
	for _, c := range []struct {
		approve Approve
		want    []string
	}{
		{ApproveAllow, []string{"  ⎿ 3 mock results\n", "was allowed (once)"}},
		{ApproveDeny, []string{"  ⎿ declined: denied: " + denyByFlag + "\n", "was denied: " + denyByFlag}},
	} {
		t.Run(string(c.approve), func(t *testing.T) {
			cfg, out, errOut := mockAgentRun(t, mock.New(mock.Config{}), "go "+mock.WordApproval)
			cfg.Approve = c.approve
			if code := runCfg(t, cfg); code != ExitOK {
				t.Fatalf("exit code %d\nerr:\n%s", code, errOut)
			}
			if !inOrder(out.String(), c.want...) {
				t.Errorf("output lacks %q:\n%s", c.want, out)
			}
		})
	}
}

func TestAgentAsksOnTheTerminal(t *testing.T) {
	cfg, out, _ := mockAgentRun(t, mock.New(mock.Config{}), mock.WordApproval+" "+mock.WordQuestion)
	cfg.Approve, cfg.InTerminal, cfg.In = ApproveAsk, true, strings.NewReader("7\n2\na\n")
	cfg.Err = out // one screen: each question follows its item's line
	if code := runCfg(t, cfg); code != ExitOK {
		t.Fatalf("exit code %d\n%s", code, out)
	}
	q := "? Which colour should the mock use? [1] Red [2] Green [3] Blue (a number; n declines) "
	got := out.String()
	if !inOrder(got, "⏺ Question: Which colour", q, q, "  ⎿ Green\n", "⏺ mock_search", "? Allow mock_search: ", "? [y]es once / [a]lways / [n]o ",
		"You chose: Green.", "was allowed (session).") {
		t.Errorf("output:\n%s", got)
	}
}

func TestAgentAskOffTerminalDenies(t *testing.T) {
	cfg, out, errOut := mockAgentRun(t, mock.New(mock.Config{}), mock.WordApproval)
	cfg.Approve = ApproveAsk
	if code := runCfg(t, cfg); code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	if !strings.Contains(out.String(), "  ⎿ declined: denied: tether could not ask for approval") || !strings.Contains(errOut.String(), "--approve=allow") {
		t.Errorf("out:\n%s\nerr:\n%s", out, errOut)
	}
}

func TestAgentJSONLinesAreCanonicalEvents(t *testing.T) {
	cfg, out, errOut := mockAgentRun(t, mock.New(mock.Config{}), "hi "+mock.WordApproval)
	cfg.JSON, cfg.ErrTerminal = true, true // no spinner with JSON, even so
	if code := runCfg(t, cfg); code != ExitOK {
		t.Fatalf("exit code %d\nerr:\n%s", code, errOut)
	}
	var kinds []agent.Kind
	for _, l := range lines(out.String()) {
		e, err := agent.ParseEvent([]byte(l))
		if err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if len(e.Raw) == 0 {
			t.Errorf("no raw: %s", l)
		}
		kinds = append(kinds, e.Kind)
	}
	if kinds[0] != agent.KindSessionStarted || kinds[len(kinds)-1] != agent.KindSessionEnded || !containsKind(kinds, agent.KindApprovalResolved) {
		t.Errorf("kinds %v", kinds)
	}
	if s := errOut.String(); s != "" {
		t.Errorf("stderr = %q", s)
	}
}

func containsKind(kinds []agent.Kind, k agent.Kind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

func TestAgentRawPrintsThePayloads(t *testing.T) {
	cfg, out, _ := mockAgentRun(t, mock.New(mock.Config{}), "hi")
	cfg.Raw = true
	if code := runCfg(t, cfg); code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	got := lines(out.String())
	if got[0] != `{"type":"mock.session.started"}` || got[len(got)-1] != `{"type":"mock.session.ended"}` {
		t.Errorf("raw lines:\n%s", out)
	}
	if !strings.Contains(out.String(), `{"type":"mock.item.delta","turn":"turn-1","item":"turn-1/reply","text":"Mock "}`) {
		t.Errorf("no reply delta:\n%s", out)
	}
}

func TestAgentFailedTurn(t *testing.T) {
	cfg, out, errOut := mockAgentRun(t, mock.New(mock.Config{}), mock.WordFail)
	if code := runCfg(t, cfg); code != ExitFailed {
		t.Fatalf("exit code %d", code)
	}
	if !strings.Contains(errOut.String(), "api_error 529: mock: the model API is overloaded; retrying (retrying)") {
		t.Errorf("stderr:\n%s", errOut)
	}
	if l := lines(out.String()); !strings.HasPrefix(l[len(l)-1], "✗ api_error 500: mock: the model API failed (FAIL_TURN) · 1 turn · ") {
		t.Errorf("summary %q", l[len(l)-1])
	}
}

func TestAgentInterrupt(t *testing.T) {
	cfg, out, errOut := mockAgentRun(t, mock.New(mock.Config{}), mock.WordSlow)
	sigs := make(chan os.Signal, 2)
	cfg.Interrupts = sigs
	started := out.holds("⏺ $ echo")
	go func() {
		<-started
		sigs <- syscall.SIGINT
	}()
	if code := runCfg(t, cfg); code != ExitFailed {
		t.Fatalf("exit code %d\nout:\n%s", code, out)
	}
	// The command shows as failed, with what output it had when the
	// interrupt came (its one line, or none yet: the two race).
	if !inOrder(out.String(), "⏺ $ echo", "  ⎿ error: ", "⏹ interrupted · 1 turn · ") || !strings.Contains(errOut.String(), "interrupting") {
		t.Errorf("out:\n%s\nerr:\n%s", out, errOut)
	}
}

// A question up on the terminal is taken down when the turn is
// interrupted, and the read of the terminal ends with the run.
func TestAgentInterruptWithdrawsTheQuestion(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	cfg, out, _ := mockAgentRun(t, mock.New(mock.Config{}), mock.WordApproval)
	sigs := make(chan os.Signal, 2)
	cfg.Approve, cfg.InTerminal, cfg.In, cfg.Interrupts = ApproveAsk, true, pr, sigs
	asked := newOutput()
	cfg.Err = asked
	go func() {
		<-asked.first
		sigs <- syscall.SIGINT
	}()
	if code := runCfg(t, cfg); code != ExitFailed {
		t.Fatalf("exit code %d\nout:\n%s", code, out)
	}
	if !strings.Contains(asked.String(), "(withdrawn)") || !strings.Contains(out.String(), "⏹ interrupted") {
		t.Errorf("out:\n%s\nerr:\n%s", out, asked)
	}
}

func TestAgentResume(t *testing.T) {
	d := mock.New(mock.Config{})
	cfg, out1, _ := mockAgentRun(t, d, "one")
	if code := runCfg(t, cfg); code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	first := strings.TrimSpace(out1.String()[strings.LastIndex(out1.String(), "session ")+len("session "):])
	cfg2, out, errOut := mockAgentRun(t, d, "two")
	cfg2.Start.Resume = first
	if code := runCfg(t, cfg2); code != ExitOK {
		t.Fatalf("exit code %d\n%s", code, errOut)
	}
	if !strings.Contains(out.String(), "Mock reply to turn 2:") || !strings.HasSuffix(out.String(), "session "+first+"\n") {
		t.Errorf("out:\n%s", out)
	}
	cfg3, _, errOut3 := mockAgentRun(t, d, "three")
	cfg3.Start.Resume = "mock-42"
	if code := runCfg(t, cfg3); code != ExitFailed || !strings.Contains(errOut3.String(), "no such conversation: mock-42") {
		t.Errorf("exit code %d, stderr %q", code, errOut3)
	}
}

// Claude Code's canonical driver without its CLI says how to go on.
func TestAgentCLINotFound(t *testing.T) {
	d := &claudecli.Canonical{Base: claude.Options{CLIPath: filepath.Join(t.TempDir(), "no-claude")}}
	cfg, _, errOut := mockAgentRun(t, d, "hi")
	cfg.JSON = true
	if code := runCfg(t, cfg); code != ExitFailed || !strings.Contains(errOut.String(), "--agent mock") {
		t.Errorf("exit code %d, stderr %q", code, errOut)
	}
}
