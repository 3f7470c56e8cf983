package runview

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
)

const (
	demoIntro = `Hi! I'm the mock Claude that ships with tether, so this runs without an API key or network. You said: "hello". Let me show you a tool call by writing hello.txt in your working directory.`
	demoDone  = "Done! I wrote "
)

func TestDemoAllowStreamsTextToolAndSummary(t *testing.T) {
	r := newMockRun(t, "", nil)
	r.cfg.Now = stepClock(1500 * time.Millisecond)
	if code := r.run(); code != ExitOK {
		t.Fatalf("exit code %d; out:\n%s\nerr:\n%s", code, r.out, r.err)
	}
	out := r.out.String()
	if n := strings.Count(out, demoIntro); n != 1 {
		t.Errorf("the streamed intro appears %d times, want once:\n%s", n, out)
	}
	if !inOrder(out, demoIntro, "\n⏺ Write hello.txt\n", "  ⎿ File created successfully at: ", demoDone, "\n✓ 2 turns") {
		t.Errorf("output out of order:\n%s", out)
	}
	summary := regexp.MustCompile(`^✓ 2 turns · \d+ in / \d+ out · \$\d+\.\d{4} · 1\.5s · session [0-9a-f]{8}-[0-9a-f-]{27}$`)
	if l := lines(out); !summary.MatchString(l[len(l)-1]) {
		t.Errorf("summary line = %q", l[len(l)-1])
	}
	if b, err := os.ReadFile(filepath.Join(r.dir, "hello.txt")); err != nil || !strings.Contains(string(b), "hello") {
		t.Errorf("hello.txt = %q, %v", b, err)
	}
	if s := r.err.String(); s != "" {
		t.Errorf("stderr = %q, want nothing", s)
	}
}

func TestDemoDenyShowsErrorResult(t *testing.T) {
	r := newMockRun(t, "", nil)
	r.cfg.Approve = ApproveDeny
	if code := r.run(); code != ExitOK {
		t.Fatalf("exit code %d; err:\n%s", code, r.err)
	}
	out := r.out.String()
	if !inOrder(out, "⏺ Write hello.txt\n", "  ⎿ error: "+denyByFlag+"\n", "I couldn't write hello.txt", "✓ 2 turns") {
		t.Errorf("output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("hello.txt exists after a deny (stat: %v)", err)
	}
}

func TestRawPrintsExactlyTheMockLines(t *testing.T) {
	tee := filepath.Join(t.TempDir(), "mock-stdout")
	r := newMockRun(t, "", map[string]string{teeEnv: tee})
	r.cfg.Raw = true
	r.cfg.ErrTerminal = true // no spinner in raw mode, even so
	if code := r.run(); code != ExitOK {
		t.Fatalf("exit code %d; err:\n%s", code, r.err)
	}
	raw, err := os.ReadFile(tee)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range lines(string(raw)) {
		if !strings.HasPrefix(l, `{"type":"control_`) { // the SDK answers those itself
			want = append(want, l)
		}
	}
	got := lines(r.out.String())
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stdout differs from the mock's lines:\ngot  %d lines\nwant %d lines\n%s", len(got), len(want), r.out)
	}
	for _, l := range got {
		var m struct{ Type string }
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.Type == "" {
			t.Errorf("line without a type (%v): %s", err, l)
		}
	}
	if got[len(got)-1][:17] != `{"type":"result",` {
		t.Errorf("last line is not the result: %s", got[len(got)-1])
	}
	if s := r.err.String(); s != "" {
		t.Errorf("stderr = %q, want nothing", s)
	}
}

func TestAskAlwaysAllows(t *testing.T) {
	r := newMockRun(t, "", nil)
	r.cfg.Approve, r.cfg.InTerminal, r.cfg.In = ApproveAsk, true, strings.NewReader("a\n")
	r.cfg.Err = r.out // one screen: the question must follow its tool line
	if code := r.run(); code != ExitOK {
		t.Fatalf("exit code %d; output:\n%s", code, r.out)
	}
	q := "? Allow Write hello.txt? [y]es once / [a]lways / [n]o "
	if !inOrder(r.out.String(), "⏺ Write hello.txt\n", q, "  ⎿ File created") {
		t.Errorf("question %q missing or out of place:\n%s", q, r.out)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "hello.txt")); err != nil {
		t.Errorf("hello.txt not written: %v", err)
	}
}

func TestAskRepeatsUntilUnderstoodThenDenies(t *testing.T) {
	r := newMockRun(t, "", nil)
	r.cfg.Approve, r.cfg.InTerminal, r.cfg.In = ApproveAsk, true, strings.NewReader("maybe\nno\n")
	if code := r.run(); code != ExitOK {
		t.Fatalf("exit code %d; err:\n%s", code, r.err)
	}
	if n := strings.Count(r.err.String(), "Allow Write hello.txt?"); n != 2 {
		t.Errorf("asked %d times, want 2:\n%s", n, r.err)
	}
	if !strings.Contains(r.out.String(), "  ⎿ error: "+denyByUser) {
		t.Errorf("output:\n%s", r.out)
	}
}

func TestAskOffTerminalDeniesAndSaysWhy(t *testing.T) {
	r := newMockRun(t, "", nil)
	r.cfg.Approve = ApproveAsk // InTerminal false
	if code := r.run(); code != ExitOK {
		t.Fatalf("exit code %d; err:\n%s", code, r.err)
	}
	if !strings.Contains(r.out.String(), "  ⎿ error: "+denyNoTerminal) {
		t.Errorf("output:\n%s", r.out)
	}
	if !strings.Contains(r.err.String(), "--approve=allow") {
		t.Errorf("stderr does not tell about --approve:\n%s", r.err)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("hello.txt exists (stat: %v)", err)
	}
}

func TestInterruptEndsTheTurn(t *testing.T) {
	r := newMockRun(t, "slow", nil)
	sigs := make(chan os.Signal, 2)
	r.cfg.Interrupts = sigs
	go func() {
		<-r.out.first
		sigs <- syscall.SIGINT
	}()
	if code := r.run(); code != ExitFailed {
		t.Fatalf("exit code %d, want %d; out:\n%s", code, ExitFailed, r.out)
	}
	out := r.out.String()
	if !inOrder(out, "tick 1 ", "\n⏹ interrupted · ") || strings.Contains(out, "tick 50") {
		t.Errorf("output:\n%s", out)
	}
	if !strings.Contains(r.err.String(), "interrupting") {
		t.Errorf("stderr:\n%s", r.err)
	}
}

func TestSecondInterruptCancels(t *testing.T) {
	r := newMockRun(t, "slow", nil)
	sigs := make(chan os.Signal, 2)
	r.cfg.Interrupts = sigs
	go func() {
		<-r.out.first
		sigs <- syscall.SIGINT
		sigs <- syscall.SIGINT
	}()
	if code := r.run(); code != ExitCancelled {
		t.Fatalf("exit code %d, want %d; out:\n%s", code, ExitCancelled, r.out)
	}
	if !strings.Contains(r.err.String(), "⏹ cancelled") {
		t.Errorf("stderr:\n%s", r.err)
	}
}

func TestCrashFails(t *testing.T) {
	r := newMockRun(t, "crash", nil)
	r.cfg.Verbose = true
	if code := r.run(); code != ExitFailed {
		t.Fatalf("exit code %d; out:\n%s", code, r.out)
	}
	if !strings.Contains(r.out.String(), "About to crash.") {
		t.Errorf("output:\n%s", r.out)
	}
	errs := r.err.String()
	if !strings.Contains(errs, "✗ ") || !strings.Contains(errs, "simulated crash") {
		t.Errorf("stderr:\n%s", errs)
	}
}

func TestVerboseLogsSkippedLines(t *testing.T) {
	r := newMockRun(t, "junk", nil)
	r.cfg.Verbose = true
	if code := r.run(); code != ExitOK {
		t.Fatalf("exit code %d; err:\n%s", code, r.err)
	}
	if !strings.Contains(r.err.String(), "skipped a line of claude output") {
		t.Errorf("stderr:\n%s", r.err)
	}
	if !strings.Contains(r.out.String(), "Hello through the junk.") {
		t.Errorf("output:\n%s", r.out)
	}
}

func TestSpinnerShowsWhileStarting(t *testing.T) {
	r := newMockRun(t, "", nil)
	r.cfg.ErrTerminal, r.cfg.OutTerminal, r.cfg.SpinnerEvery = true, true, time.Millisecond
	if code := r.run(); code != ExitOK {
		t.Fatalf("exit code %d; err:\n%s", code, r.err)
	}
	errs := r.err.String()
	if !strings.Contains(errs, "starting claude…") || !strings.HasSuffix(errs, "\r\x1b[K") {
		t.Errorf("stderr has no spinner, or it was not erased: %q", errs)
	}
}

func TestCLINotFound(t *testing.T) {
	var out, errs strings.Builder
	code := Run(t.Context(), Config{
		Options: claude.Options{CLIPath: filepath.Join(t.TempDir(), "no-claude")},
		Prompt:  "hi", Out: &out, Err: &errs,
	})
	if code != ExitFailed || !strings.Contains(errs.String(), "--mock") {
		t.Errorf("exit code %d, stderr %q", code, errs.String())
	}
}
