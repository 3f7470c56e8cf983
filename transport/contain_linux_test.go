package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/contain"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// escapees is an agent that leaves processes behind in every way a Bash
// command can, each a sleep with a duration of its own (its name in
// /proc), then waits on stdin.
type escapees struct {
	conn Conn
	pid  int
	// inGroup stay in the agent's process group; left do not.
	inGroup, left []string
}

// uniqueArg is a sleep duration no other process has.
func uniqueArg(t *testing.T, i int) string {
	t.Helper()
	return fmt.Sprintf("%d.%d%09d", 4000+i, os.Getpid()%1000, time.Now().UnixNano()%1e9)
}

// startEscapees starts such an agent with cmd's settings and waits until
// all its leftovers run. withEnvI adds one that also clears its
// environment (which only a cgroup catches).
func startEscapees(t *testing.T, cmd *Command, withEnvI bool) *escapees {
	t.Helper()
	e := &escapees{
		inGroup: []string{uniqueArg(t, 1)},
		left:    []string{uniqueArg(t, 2), uniqueArg(t, 3), uniqueArg(t, 4), uniqueArg(t, 5)},
	}
	// In order: stays in the group; a session of its own; the same after
	// a fork (setsid -f); a double fork; a clean environment below a
	// process of the agent's that has left.
	script := `nohup sleep "$1" >/dev/null 2>&1 &
setsid sleep "$2" >/dev/null 2>&1 &
setsid -f sleep "$3" >/dev/null 2>&1
(setsid sleep "$4" >/dev/null 2>&1 &)
setsid -f sh -c 'env -i /bin/sleep "$1" & wait' sh "$5" >/dev/null 2>&1
`
	args := append(e.inGroup[:1:1], e.left...)
	if withEnvI {
		// Left and lost its parent with a clean environment: only a
		// cgroup tells it apart.
		e.left = append(e.left, uniqueArg(t, 6))
		args = append(args, e.left[len(e.left)-1])
		script += `setsid -f env -i /bin/sleep "$6" >/dev/null 2>&1
`
	}
	script += `echo $$; exec cat`
	cmd.Path, cmd.Args = "/bin/sh", append([]string{"-c", script, "sh"}, args...)
	cmd.ExitGrace, cmd.TermGrace, cmd.EOFExitWait = testExitGrace, testTermGrace, hangGuard
	e.conn = connect(t, cmd)
	e.pid = pids(t, readLine(t, e.conn))[0]
	for _, arg := range e.all() {
		waitRunning(t, arg)
	}
	t.Cleanup(func() { killAll(e.all()) }) // should there be any left
	return e
}

func (e *escapees) all() []string { return append(append([]string{}, e.inGroup...), e.left...) }

// waitRunning waits until sleep arg itself runs: not the setsid or sh
// before it, whose command lines hold arg too. A group killed while the
// setsid that leaves it has not yet left would take it along.
func waitRunning(t *testing.T, arg string) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !sleeping(arg) {
		if time.Now().After(deadline) {
			t.Fatalf("sleep %s never started", arg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sleeping says whether a process runs sleep with arg.
func sleeping(arg string) bool {
	for _, pid := range testenv.PIDsWithArg(arg) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		argv := strings.Split(string(b), "\x00")
		if filepath.Base(argv[0]) == "sleep" {
			return true
		}
	}
	return false
}

// waitNone waits for every process with one of args to be gone.
func waitNone(t *testing.T, what string, args []string) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		var left []string
		for _, a := range args {
			if p := testenv.PIDsWithArg(a); len(p) > 0 {
				left = append(left, fmt.Sprintf("sleep %s (pid %v)", a, p))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s still running: %s", what, strings.Join(left, ", "))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func assertRunning(t *testing.T, what string, args []string) {
	t.Helper()
	for _, a := range args {
		if len(testenv.PIDsWithArg(a)) == 0 {
			t.Errorf("%s: sleep %s is gone", what, a)
		}
	}
}

func killAll(args []string) {
	for _, a := range args {
		for _, pid := range testenv.PIDsWithArg(a) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// zombieChildren lists this process's children that are zombies.
func zombieChildren(t *testing.T) []int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				out = append(out, pid)
			}
		}
	}
	return out
}

// waitNoZombies waits for this process to have no zombie child: the
// sweep reaps what it killed, the reaper what came to us some other way.
func waitNoZombies(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		z := zombieChildren(t)
		if len(z) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("zombie children left: %v", z)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requireCgroup skips without a cgroup this process may create cgroups in.
func requireCgroup(t *testing.T) string {
	t.Helper()
	dir, err := contain.Delegated()
	if err != nil {
		t.Skipf("no delegated cgroup v2 here: %v", err)
	}
	return dir
}

// enableSubreaper makes the test process a subreaper for one test. Such
// tests are not parallel: it changes the whole process.
func enableSubreaper(t *testing.T) {
	t.Helper()
	stop, err := EnableSubreaper()
	if err != nil {
		t.Skipf("cannot be a child subreaper here: %v", err)
	}
	t.Cleanup(stop)
}

// The case, in each mode that catches it: an agent killed with
// SIGKILL (as the OOM killer does) while it has processes running that
// left its group; those die with it, within the hang guard, the typed
// exit error still comes at once, and another agent's processes run on
// until that one is closed. With and without a Launcher.
func TestContainKillsWhatLeftTheGroup(t *testing.T) {
	for _, mode := range []Containment{ContainCgroup, ContainSubreaper} {
		for _, shared := range []bool{false, true} {
			name := string(mode)
			if shared {
				name += "/launcher"
			}
			t.Run(name, func(t *testing.T) {
				if mode == ContainCgroup {
					requireCgroup(t)
				} else {
					enableSubreaper(t)
				}
				var l Launcher
				newCmd := func() *Command {
					c := &Command{Containment: mode}
					if shared {
						c.Launcher = &l
					}
					return c
				}
				a := startEscapees(t, newCmd(), mode == ContainCgroup)
				b := startEscapees(t, newCmd(), mode == ContainCgroup)
				if got := a.conn.(*commandConn).fence.mode; got != mode {
					t.Fatalf("mode %q, want %q", got, mode)
				}

				if err := syscall.Kill(a.pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed := time.Now()
				err := readErr(t, a.conn)
				var exit *ExitError
				if !errors.As(err, &exit) || exit.Signal != "SIGKILL" || err.Error() != "agent process was killed by signal SIGKILL" {
					t.Fatalf("Read after SIGKILL = %v, want the typed SIGKILL error", err)
				}
				if took := time.Since(killed); took > time.Second {
					t.Errorf("the exit error came %v after the kill", took)
				}
				waitNone(t, "agent A's leftovers", a.all())
				assertRunning(t, "agent B, while A was ended", b.all())

				closeConn(t, b.conn)
				waitNone(t, "agent B's leftovers after Close", b.all())
				closeConn(t, a.conn)
				assertReaped(t, a.pid)
				assertReaped(t, b.pid)
				if mode == ContainSubreaper {
					waitNoZombies(t)
				}
			})
		}
	}
}

// Forced to group, the fence is off: what stays in the group dies with
// the agent, what left it does not (the limit docs/processes.md states).
func TestContainGroupOnlyEndsTheGroup(t *testing.T) {
	e := startEscapees(t, &Command{Containment: ContainGroup}, false)
	if err := syscall.Kill(e.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var exit *ExitError
	if err := readErr(t, e.conn); !errors.As(err, &exit) || exit.Signal != "SIGKILL" {
		t.Fatalf("Read = %v, want SIGKILL", err)
	}
	closeConn(t, e.conn)
	waitNone(t, "the in-group child", e.inGroup)
	assertRunning(t, "group mode", e.left)
}

// Auto uses a cgroup when it can: the agent runs in a cgroup of its own,
// which is gone once the agent is closed.
func TestContainAutoUsesCgroup(t *testing.T) {
	t.Parallel()
	parent := requireCgroup(t)
	conn := connect(t, shell(`echo $$; exec cat`))
	pid := pids(t, readLine(t, conn))[0]
	f := conn.(*commandConn).fence
	if f.mode != ContainCgroup || filepath.Dir(f.cgroup.Dir) != parent {
		t.Fatalf("fence %+v, want a cgroup under %s", f, parent)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Base(f.cgroup.Dir); !strings.Contains(string(b), "0::") || !strings.HasSuffix(strings.TrimSpace(lineWith(string(b), "0::")), "/"+want) {
		t.Fatalf("agent's cgroups:\n%s\nwant 0::…/%s", b, want)
	}
	closeConn(t, conn)
	if _, err := os.Stat(f.cgroup.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cgroup %s still there after Close (%v)", f.cgroup.Dir, err)
	}
}

func lineWith(text, prefix string) string {
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}

// In subreaper mode each agent's environment carries a marker of its own;
// with Env nil it is this process's environment plus PWD, as exec gives.
func TestContainSubreaperMarksEachAgent(t *testing.T) {
	enableSubreaper(t)
	dir := t.TempDir()
	markers := map[string]bool{}
	for range 2 {
		cmd := shell(`echo "$` + contain.MarkerVar + `|$PWD|$HOME"; exec cat`)
		cmd.Containment, cmd.Dir = ContainSubreaper, dir
		conn := connect(t, cmd)
		parts := strings.Split(readLine(t, conn), "|")
		if len(parts) != 3 || parts[0] == "" || markers[parts[0]] {
			t.Fatalf("marker %q (seen %v)", parts, markers)
		}
		markers[parts[0]] = true
		if want, _ := filepath.Abs(dir); parts[1] != want || parts[2] != os.Getenv("HOME") {
			t.Errorf("PWD %q HOME %q, want %q and this process's", parts[1], parts[2], want)
		}
		closeConn(t, conn)
	}
}

// A mode asked for by name that this process cannot provide, or a mode
// that does not exist, fails Connect with a typed error.
func TestContainForcedModeUnavailable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode Containment
		want error
	}{
		{"namespace", ErrUnknownContainment},
		{ContainSubreaper, ErrContainmentUnavailable}, // parallel tests never enable it
	} {
		cmd := shell("exit 0")
		cmd.Containment = tc.mode
		conn, err := cmd.Connect(context.Background())
		if err == nil {
			_ = conn.Close()
			t.Fatalf("Connect with %q succeeded", tc.mode)
		}
		var start *StartError
		if !errors.As(err, &start) || !errors.Is(err, tc.want) {
			t.Errorf("Connect with %q = %v, want a *StartError matching %v", tc.mode, err, tc.want)
		}
	}
}

// fakeHost is a host whose cgroup and subreaper answers are given.
func fakeHost(cgroupErr error, subreaper bool) host {
	return host{
		cgroupParent: func() (string, error) { return "/cg", cgroupErr },
		newCgroup:    func(parent string) (*contain.Cgroup, error) { return &contain.Cgroup{Dir: parent + "/x"}, nil },
		subreaper:    func() bool { return subreaper },
	}
}

// What each wish gets, given what the process allows.
func TestContainChoose(t *testing.T) {
	t.Parallel()
	noCgroup := fmt.Errorf("%w: read-only", contain.ErrNoCgroup)
	for _, tc := range []struct {
		want      Containment
		cgroupErr error
		subreaper bool
		mode      Containment
		err       error
		why       string
	}{
		{ContainAuto, nil, true, ContainCgroup, nil, "under /cg"},
		{ContainAuto, noCgroup, true, ContainSubreaper, nil, "read-only"},
		{ContainAuto, noCgroup, false, ContainGroup, nil, "not a child subreaper"},
		{ContainCgroup, noCgroup, true, "", ErrContainmentUnavailable, ""},
		{ContainSubreaper, nil, false, "", ErrContainmentUnavailable, ""},
		{ContainSubreaper, nil, true, ContainSubreaper, nil, "asked for"},
		{ContainGroup, nil, true, ContainGroup, nil, "asked for"},
		{"everything", nil, true, "", ErrUnknownContainment, ""},
	} {
		f, why, err := fakeHost(tc.cgroupErr, tc.subreaper).choose(tc.want)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("choose(%q) = %v, want %v", tc.want, err, tc.err)
			}
			continue
		}
		if err != nil || f.mode != tc.mode || !strings.Contains(why, tc.why) {
			t.Errorf("choose(%q) with cgroup err %v, subreaper %v = %+v %q %v; want %q (%q)",
				tc.want, tc.cgroupErr, tc.subreaper, f, why, err, tc.mode, tc.why)
		}
		if f.mode == ContainSubreaper && f.marker == "" {
			t.Errorf("choose(%q): subreaper mode without a marker", tc.want)
		}
	}
}

// When the kernel will not start the agent in its cgroup, auto starts it
// without one, and leaves no cgroup behind.
func TestContainAutoFallsBackWhenCgroupStartFails(t *testing.T) {
	t.Parallel()
	parent := requireCgroup(t)
	var made string
	h := realHost()
	h.newCgroup = func(parent string) (*contain.Cgroup, error) {
		g, err := contain.NewCgroup(parent)
		if err != nil {
			return nil, err
		}
		made = g.Dir
		// Gone before the clone: CLONE_INTO_CGROUP fails (ENODEV).
		return g, syscall.Rmdir(g.Dir)
	}
	h.subreaper = func() bool { return false }
	cmd := shell(`echo up; exec cat`)
	conn, err := cmd.start(h)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if got := readLine(t, conn); got != "up" {
		t.Fatalf("line %q", got)
	}
	if conn.fence.mode != ContainGroup {
		t.Errorf("mode %q, want group after the cgroup failed", conn.fence.mode)
	}
	if made == "" || filepath.Dir(made) != parent {
		t.Fatalf("no cgroup was tried (%q)", made)
	}
	if _, err := os.Stat(made); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cgroup %s left behind", made)
	}
}

// records is a slog handler that keeps the records it gets.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// containLogs returns the "contained" records at level and their modes.
func (r *records) containLogs(level slog.Level) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var modes []string
	for _, rec := range r.recs {
		if rec.Message != "agent processes contained" || rec.Level != level {
			continue
		}
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "mode" {
				modes = append(modes, a.Value.String())
			}
			return true
		})
	}
	return modes
}

// The mode is logged once per Launcher (once per runner), not per agent;
// a Command without one logs it at debug level at each start.
func TestContainLoggedOncePerLauncher(t *testing.T) {
	t.Parallel()
	var l Launcher
	shared, single := &records{}, &records{}
	for range 3 {
		cmd := shell("exit 0")
		cmd.Launcher, cmd.Logger, cmd.Containment = &l, slog.New(shared), ContainGroup
		closeConn(t, connect(t, cmd))
		cmd = shell("exit 0")
		cmd.Logger, cmd.Containment = slog.New(single), ContainGroup
		closeConn(t, connect(t, cmd))
	}
	if got := shared.containLogs(slog.LevelInfo); len(got) != 1 || got[0] != "group" {
		t.Errorf("with a Launcher: info records for modes %q, want one for group", got)
	}
	if got := single.containLogs(slog.LevelDebug); len(got) != 3 {
		t.Errorf("without a Launcher: debug records for modes %q, want 3", got)
	}
	if got := single.containLogs(slog.LevelInfo); len(got) != 0 {
		t.Errorf("without a Launcher: info records %q, want none", got)
	}
}

// The first part of the issue, in every mode: the agent killed from
// outside takes its process group with it, and says how it died.
func TestContainKilledAgentEndsItsGroup(t *testing.T) {
	t.Parallel()
	for _, mode := range []Containment{ContainGroup, ContainAuto} {
		arg := uniqueArg(t, 0)
		cmd := shell(`sleep "$1" & echo $$; exec cat`, arg)
		cmd.Containment = mode
		conn := connect(t, cmd)
		pid := pids(t, readLine(t, conn))[0]
		waitRunning(t, arg)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var exit *ExitError
		if err := readErr(t, conn); !errors.As(err, &exit) || exit.Signal != "SIGKILL" {
			t.Fatalf("%q: Read = %v, want SIGKILL", mode, err)
		}
		waitNone(t, string(mode)+": the group's child", []string{arg})
	}
}
