package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/cli/runview"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// A CLI that exits during initialize says why: the exit status and its
// last stderr lines, with "claude:" said once. The real CLI's answer to
// an unknown --resume id is an error result, then exit 1.
func TestRealCLIStartupFailureSaysWhy(t *testing.T) {
	timed(t)
	opts, _ := localTarget(t).opts(t)
	opts.Resume = "5b6a3f0e-3c1d-4a8e-9f7b-2d1c0e9a8b7c"
	c, err := claude.Connect(testCtx(t), opts)
	if err == nil {
		c.Close()
		t.Fatal("Connect resumed a session that does not exist")
	}
	var exit *claude.ProcessError
	if !errors.As(err, &exit) || exit.Code != 1 || !errors.Is(err, claude.ErrProcessExited) {
		t.Fatalf("err = %v (%#v), want a *ProcessError with exit code 1", err, err)
	}
	saysWhy(t, err, opts.Resume)
}

// Through a runner: a session the runner knows whose conversation the CLI
// lost (its home was wiped) is refused with the CLI's own reason.
func TestRealCLIRunnerStartupFailureSaysWhy(t *testing.T) {
	timed(t)
	tr := startRunner(t, true)
	opts, _ := runnerTarget(tr).opts(t)
	first, err := claude.FinalResult(claude.Query(testCtx(t), "SAY hello", opts))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(tr.HomeDir(opts.Runner.WorkspaceID), ".claude", "projects")); err != nil {
		t.Fatal(err)
	}
	opts.Resume = first.SessionID
	c, err := claude.Connect(testCtx(t), opts)
	if err == nil {
		c.Close()
		t.Fatal("Connect resumed a conversation the CLI no longer has")
	}
	if !errors.Is(err, claude.ErrProcessExited) {
		t.Errorf("err = %#v, want one matching ErrProcessExited", err)
	}
	saysWhy(t, err, opts.Resume)
}

// saysWhy checks a start-up failure names the exit status and the CLI's
// stderr, with "claude:" said once.
func saysWhy(t *testing.T, err error, id string) {
	t.Helper()
	msg := err.Error()
	t.Logf("err: %s", msg)
	if !strings.Contains(msg, "No conversation found with session ID: "+id) ||
		!strings.Contains(msg, "exited with code 1") || strings.Count(msg, "claude:") != 1 {
		t.Errorf("err = %q", msg)
	}
}

// A turn the model API fails is an API error with its status and message,
// in the SDK and in what `tether run` prints.
func TestRealCLIAPIErrorIsTyped(t *testing.T) {
	timed(t)
	tg := localTarget(t)
	opts, _ := tg.opts(t)
	_, err := claude.FinalResult(claude.Query(testCtx(t), "ERROR_400", opts))
	var api *claude.APIError
	if !errors.As(err, &api) || api.Status != 400 || !strings.Contains(api.Message, "invalid_request_error") {
		t.Fatalf("err = %v (%#v), want an *APIError 400", err, err)
	}
	var out, errOut testenv.SyncBuffer
	opts, _ = tg.opts(t)
	cfg := runview.Config{Options: opts, Prompt: "ERROR_400", Out: &out, Err: &errOut, Approve: runview.ApproveDeny}
	if code := runview.Run(testCtx(t), cfg); code != runview.ExitFailed {
		t.Errorf("exit %d, want %d", code, runview.ExitFailed)
	}
	if got := out.String(); !strings.Contains(got, "✗ API error 400: ") || strings.Contains(got, "success") {
		t.Errorf("tether run printed:\n%s", got)
	}
}
