package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/transport"
)

// What a Bash command starts dies with the CLI that ran it, when the CLI is
// killed with SIGKILL (as the OOM killer does) while the command runs:
// through an unsandboxed runner and through the SDK running the CLI here,
// with the containment each picks on this machine (a cgroup where one is
// delegated, else the subreaper), and with the subreaper forced. The host
// still gets the typed error at once. (A sandboxed runner's pid namespace
// already ends them.)
func TestRealCLIOrphansDieWithTheCLI(t *testing.T) {
	cli := testenv.RequireClaudeCLI(t)
	timed(t)
	// As tether's main does.
	stop, err := transport.EnableSubreaper()
	if err != nil {
		t.Skipf("cannot be a child subreaper here: %v", err)
	}
	t.Cleanup(stop)

	t.Run("Runner", func(t *testing.T) {
		timed(t)
		tr := startRunner(t, false)
		kids := newOrphanArgs()
		c, _ := seedSession(t, tr, newWorkspaceID("orphans"),
			map[string]any{"model": "claude-sonnet-4-5", "allowed_tools": []string{"Bash"}})
		c.send(map[string]any{"type": "query", "request_id": "q1", "prompt": bashPrompt(kids.command()), "opts": map[string]any{}})
		killed := killCLIUnder(t, cli, kids)
		for {
			f := c.next()
			if f["type"] == "done" {
				t.Fatalf("the turn ended without an error: %v", f)
			}
			if f["type"] != "error" {
				continue
			}
			details, _ := f["details"].(string)
			if f["code"] != "agent_exited" || !strings.Contains(details, "agent process was killed by signal SIGKILL") {
				t.Fatalf("error frame %v, want agent_exited: killed by SIGKILL", f)
			}
			break
		}
		if took := time.Since(killed); took > 5*time.Second {
			t.Errorf("agent_exited came %v after the kill", took)
		}
		kids.assertGone(t)
		// The session is over: the runner closes the connection.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			if _, _, err := c.ws.Read(ctx); err != nil {
				if s := websocket.CloseStatus(err); s != websocket.StatusNormalClosure {
					t.Fatalf("after agent_exited: %v (close status %v)", err, s)
				}
				break
			}
		}
	})

	t.Run("SDK", func(t *testing.T) {
		timed(t)
		opts := localBashOptions(t, cli)
		sdkKill(t, cli, opts)
	})

	// The CLI hands the agent's marker on to Bash's processes: the mode a
	// runner without a delegated cgroup uses.
	t.Run("SDKSubreaper", func(t *testing.T) {
		timed(t)
		opts := localBashOptions(t, cli)
		args, err := opts.CommandArgs()
		if err != nil {
			t.Fatal(err)
		}
		opts.Transport = &transport.Command{Path: cli, Args: args, Env: opts.CommandEnv(), Dir: opts.Cwd,
			Containment: transport.ContainSubreaper}
		sdkKill(t, cli, opts)
	})
}

// localBashOptions runs the CLI here against a fake model, Bash allowed.
func localBashOptions(t *testing.T, cli string) claude.Options {
	t.Helper()
	opts, _ := localTarget(t).opts(t)
	opts.CLIPath, opts.AllowedTools = cli, []string{"Bash"}
	return opts
}

// sdkKill runs the scenario through the SDK with opts.
func sdkKill(t *testing.T, cli string, opts claude.Options) {
	t.Helper()
	ctx := testCtx(t)
	c, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	kids := newOrphanArgs()
	if err := c.Query(ctx, bashPrompt(kids.command())); err != nil {
		t.Fatal(err)
	}
	end := make(chan error, 1)
	go func() {
		var last error
		for _, err := range c.Receive(ctx) {
			if err != nil {
				last = err
			}
		}
		end <- last
	}()
	killed := killCLIUnder(t, cli, kids)
	err = <-end
	var exit *claude.ProcessError
	if !errors.As(err, &exit) || exit.Signal != "SIGKILL" || !strings.Contains(err.Error(), "agent process was killed by signal SIGKILL") {
		t.Fatalf("Receive ended with %v, want the CLI killed by SIGKILL", err)
	}
	if took := time.Since(killed); took > 5*time.Second {
		t.Errorf("the error came %v after the kill", took)
	}
	kids.assertGone(t)
}

// orphanArgs name a Bash command's children: sleep durations that no
// other process has, so /proc shows which processes are theirs.
type orphanArgs struct {
	setsid, child string
}

func newOrphanArgs() orphanArgs {
	n := time.Now().UnixNano() % 1e9
	return orphanArgs{
		setsid: fmt.Sprintf("5001.%d%09d", os.Getpid()%1000, n),
		child:  fmt.Sprintf("5002.%d%09d", os.Getpid()%1000, n),
	}
}

// command starts one child in a session of its own and one plain child,
// and waits: the tool call runs until the CLI is killed.
func (o orphanArgs) command() string {
	return "setsid sleep " + o.setsid + " >/dev/null 2>&1 & sleep " + o.child + " >/dev/null 2>&1 & echo started; wait"
}

func (o orphanArgs) assertGone(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := append(testenv.PIDsWithArg(o.setsid), testenv.PIDsWithArg(o.child)...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("the Bash command's children outlived the CLI: pids %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killCLIUnder waits for both children to run, finds the CLI among the
// plain child's ancestors and kills it with SIGKILL.
func killCLIUnder(t *testing.T, cli string, o orphanArgs) time.Time {
	t.Helper()
	exe, err := filepath.EvalSymlinks(cli)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	var child []int
	for {
		child = testenv.PIDsWithArg(o.child)
		if len(child) == 1 && len(testenv.PIDsWithArg(o.setsid)) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Bash command's children never ran (child %v, setsid %v)", child, testenv.PIDsWithArg(o.setsid))
		}
		time.Sleep(20 * time.Millisecond)
	}
	for pid := child[0]; pid > 1; pid = parentOf(pid) {
		if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); target == exe {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			return time.Now()
		}
	}
	t.Fatalf("no ancestor of pid %d runs %s", child[0], exe)
	return time.Time{}
}

// parentOf is pid's parent, or 0 once it is gone.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
