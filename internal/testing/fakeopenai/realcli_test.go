package fakeopenai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/testenv"
)

// cliTimeout bounds one real CLI run. Codex takes about 1 s; OpenCode needs
// 7-10 s of CPU on a small VM, and took 37 s on a busy one.
const cliTimeout = 120 * time.Second

// cliRun is what one real CLI run printed.
type cliRun struct {
	lines    [][]byte
	stderr   string
	exitCode int
}

// runCLI runs bin with env in dir, stdin empty, in a process group that is
// killed on timeout and once it has exited, and returns its stdout lines.
// A non-zero exit is not an error here: API errors exit 1 by design.
func runCLI(t *testing.T, srv *Server, bin string, env []string, dir string, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
	defer cancel()
	cmd := testenv.GroupCommand(ctx, bin, args...)
	cmd.Env, cmd.Dir = env, dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	before := len(srv.Requests())
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if kerr := testenv.KillGroup(cmd); kerr != nil {
		t.Errorf("%v", kerr)
	}
	var cpu time.Duration
	if ps := cmd.ProcessState; ps != nil {
		cpu = ps.UserTime() + ps.SystemTime()
	}
	t.Logf("%s %q: %v in %v (CPU %v); %d requests to the fake", filepath.Base(bin), args[len(args)-1], err,
		took.Round(time.Millisecond), cpu.Round(time.Millisecond), len(srv.Requests())-before)
	if ctx.Err() != nil {
		t.Fatalf("timed out after %v; stderr:\n%s", cliTimeout, stderr.String())
	}
	run := cliRun{stderr: stderr.String()}
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		run.exitCode = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("run: %v", err)
	}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		run.lines = append(run.lines, bytes.Clone(sc.Bytes()))
	}
	if len(run.lines) == 0 {
		t.Fatalf("no output (exit %d); stderr:\n%s", run.exitCode, run.stderr)
	}
	return run
}

// lastRequest is the body of the last request to path.
func lastRequest(t *testing.T, srv *Server, path string) json.RawMessage {
	t.Helper()
	reqs := srv.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Method == "POST" && reqs[i].Path == path {
			return reqs[i].Body
		}
	}
	t.Fatalf("no POST %s among %d requests", path, len(reqs))
	return nil
}

// shape is a line's kind: its type, and the type of the item or part it
// carries, which is what a golden transcript and a fresh run share.
func shape[T interface{ kind() string }](t *testing.T, lines [][]byte) []string {
	t.Helper()
	out := make([]string, len(lines))
	for i, l := range lines {
		var v T
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatalf("line %s: %v", l, err)
		}
		out[i] = v.kind()
	}
	return out
}

func checkShape[T interface{ kind() string }](t *testing.T, got [][]byte, golden string) {
	t.Helper()
	want := shape[T](t, readLines(t, golden))
	if g := shape[T](t, got); !slices.Equal(g, want) {
		t.Errorf("output shape %q, the captured run %s had %q", g, golden, want)
	}
}
