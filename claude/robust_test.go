package claude_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/protocol/ndjson"
)

// mockOptions runs this test binary as the mock CLI with a scenario.
func mockOptions(t *testing.T, scenario string, env map[string]string) claude.Options {
	t.Helper()
	// GORACE: a race-built binary otherwise sleeps a second at exit.
	e := map[string]string{mockclaude.EnvMain: "1", mockclaude.EnvScenario: scenario, "GORACE": "atexit_sleep_ms=0"}
	for k, v := range env {
		e[k] = v
	}
	return claude.Options{CLIPath: os.Args[0], Cwd: t.TempDir(), Env: e, ShutdownGrace: 500 * time.Millisecond}
}

// collect runs a one-shot query with a hard guard against hangs.
func collect(t *testing.T, opts claude.Options) (msgs []claude.Message, last error, took time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	for msg, err := range claude.Query(ctx, "hello", opts) {
		if err != nil {
			last = err
			continue
		}
		msgs = append(msgs, msg)
	}
	if ctx.Err() != nil {
		t.Fatal("query hung until the guard timeout")
	}
	return msgs, last, time.Since(start)
}

func TestMockDemoThroughRealProcess(t *testing.T) {
	opts := mockOptions(t, "demo", nil)
	opts.CanUseTool = func(context.Context, claude.PermissionRequest) (claude.PermissionResult, error) {
		return claude.Allow{}, nil
	}
	msgs, err, _ := collect(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, ok := msgs[len(msgs)-1].(*claude.ResultMessage)
	if !ok || res.IsError || res.NumTurns != 2 {
		t.Fatalf("last message = %#v", msgs[len(msgs)-1])
	}
	if _, err := os.Stat(filepath.Join(opts.Cwd, "hello.txt")); err != nil {
		t.Fatalf("allowed Write did not happen: %v", err)
	}
}

func TestCrashMidLineGivesProcessErrorWithStderr(t *testing.T) {
	var skipped atomic.Int32
	opts := mockOptions(t, "crash-midline", nil)
	opts.OnLineError = func(err error) {
		var tr *ndjson.TruncatedLineError
		if errors.As(err, &tr) {
			skipped.Add(1)
		}
	}
	_, err, _ := collect(t, opts)
	var pe *claude.ProcessError
	if !errors.As(err, &pe) || pe.Code != 1 || !strings.Contains(pe.StderrTail, "simulated crash") {
		t.Fatalf("err = %v", err)
	}
	if skipped.Load() != 1 {
		t.Fatalf("truncated line reported %d times", skipped.Load())
	}
}

func TestExitZeroWithoutResultIsAnError(t *testing.T) {
	_, err, _ := collect(t, mockOptions(t, "exit0-noresult", nil))
	if !errors.Is(err, claude.ErrNoResult) {
		t.Fatalf("err = %v", err)
	}
}

func TestJunkLinesDoNotStopTheSession(t *testing.T) {
	var skipped atomic.Int32
	opts := mockOptions(t, "junk", nil)
	opts.OnLineError = func(error) { skipped.Add(1) }
	msgs, err, _ := collect(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := msgs[len(msgs)-1].(*claude.ResultMessage); !ok || skipped.Load() < 5 {
		t.Fatalf("last = %T, skipped = %d", msgs[len(msgs)-1], skipped.Load())
	}
	var unknown bool
	for _, m := range msgs {
		if _, ok := m.(*claude.UnknownMessage); ok {
			unknown = true
		}
	}
	if !unknown {
		t.Fatal("future message type was dropped")
	}
}

func TestLingeringCLIEndsWithinShutdownGrace(t *testing.T) {
	opts := mockOptions(t, "linger", nil)
	msgs, err, took := collect(t, opts)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("err = %v, msgs = %d", err, len(msgs))
	}
	// Close: grace after stdin EOF, then SIGTERM ends it. Bounded, not hung.
	if took > 15*time.Second {
		t.Fatalf("took %s", took)
	}
}

func TestClosedStdoutWhileAliveEnds(t *testing.T) {
	msgs, err, _ := collect(t, mockOptions(t, "close-stdout", nil))
	if err != nil || len(msgs) == 0 {
		t.Fatalf("err = %v, msgs = %d", err, len(msgs))
	}
}

func TestNoInitializeAnswerTimesOut(t *testing.T) {
	opts := mockOptions(t, "no-init", nil)
	opts.InitializeTimeout = 300 * time.Millisecond
	_, err, _ := collect(t, opts)
	if !errors.Is(err, claude.ErrInitializeTimeout) {
		t.Fatalf("err = %v", err)
	}
}

func TestHugeLineOverCapIsSkipped(t *testing.T) {
	var tooLong atomic.Int64
	opts := mockOptions(t, "huge-line", map[string]string{mockclaude.EnvSize: "2M"})
	opts.MaxLineSize = 1 << 20
	opts.OnLineError = func(err error) {
		var tl *claude.LineTooLongError
		if errors.As(err, &tl) {
			tooLong.Store(tl.Size)
		}
	}
	msgs, err, _ := collect(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	if tooLong.Load() < 2<<20 {
		t.Fatalf("overlong line not reported (size %d)", tooLong.Load())
	}
	if _, ok := msgs[len(msgs)-1].(*claude.ResultMessage); !ok {
		t.Fatal("session did not go on to the result")
	}
}

func TestHugeLineUnderCapArrivesWhole(t *testing.T) {
	msgs, err, _ := collect(t, mockOptions(t, "huge-line", map[string]string{mockclaude.EnvSize: "8M"}))
	if err != nil {
		t.Fatal(err)
	}
	var longest int
	for _, m := range msgs {
		if a, ok := m.(*claude.AssistantMessage); ok && len(a.Message.Content.Text()) > longest {
			longest = len(a.Message.Content.Text())
		}
	}
	if longest != 8<<20 {
		t.Fatalf("longest text = %d", longest)
	}
}

func TestMissingCLIIsTyped(t *testing.T) {
	_, err := claude.Connect(context.Background(), claude.Options{CLIPath: filepath.Join(t.TempDir(), "no-claude")})
	if !errors.Is(err, claude.ErrCLINotFound) {
		t.Fatalf("err = %v", err)
	}
}
