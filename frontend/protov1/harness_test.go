package protov1_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/frontend/protov1"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

func TestMain(m *testing.M) {
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockclaude.Main())
	}
	goleak.VerifyTestMain(m)
}

// testRunner is a runner on loopback whose agent is the mock CLI.
type testRunner struct {
	t    testing.TB
	url  string
	core *runnertest.Core
	log  *eventlog.Bolt
	root string
	stop func() // shuts the runner down (also at cleanup)
}

// runnerOpts configure startRunnerWith.
type runnerOpts struct {
	scenario string
	grace    time.Duration
	env      map[string]string // more mock environment (TETHER_MOCK_N, …)
	dir      string            // data directory to reuse (a restart); "" = new
	maxFrame int64
	// wrap, when set, is the core the front end sees, made from the real
	// one (to make it fail on cue).
	wrap func(sessions.Core) sessions.Core
}

func startRunner(t testing.TB, scenario string, grace time.Duration) *testRunner {
	t.Helper()
	return startRunnerWith(t, runnerOpts{scenario: scenario, grace: grace})
}

func startRunnerWith(t testing.TB, o runnerOpts) *testRunner {
	t.Helper()
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	env := map[string]string{
		mockclaude.EnvMain: "1", mockclaude.EnvScenario: o.scenario, mockclaude.EnvDelayMS: "5",
		"GORACE": "atexit_sleep_ms=0", "PATH": os.Getenv("PATH"),
	}
	maps.Copy(env, o.env)
	core, err := runnertest.NewCore(dir, claudecli.Config{CLIPath: os.Args[0], ShutdownGrace: 500 * time.Millisecond, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	maxFrame := o.maxFrame
	if maxFrame == 0 {
		maxFrame = 1 << 20
	}
	var seen sessions.Core = core.Sessions
	if o.wrap != nil {
		seen = o.wrap(seen)
	}
	v1 := &protov1.Server{Sessions: seen, GracePeriod: o.grace, MaxFrameSize: maxFrame, PingInterval: time.Second}
	srv := httptest.NewServer(v1)
	stop := sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := core.Close(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		srv.Close()
	})
	t.Cleanup(stop)
	return &testRunner{t: t, url: "ws" + strings.TrimPrefix(srv.URL, "http"), core: core, log: core.Log, root: dir, stop: stop}
}

// gitLog is the subjects of the snapshots of a workspace, newest first.
func (tr *testRunner) gitLog(workspaceID string) []string {
	tr.t.Helper()
	gitDir := filepath.Join(tr.root, "ws", workspace.PrivateDir, "git", workspaceID+".git")
	out, err := runGit(gitDir, "log", "--format=%s")
	if err != nil {
		tr.t.Fatalf("git log: %v\n%s", err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// logFrames is the frames a session's log makes after seq `after`, each
// without its seq, as the session's own kind of host reads them (relay
// for a host_control session).
func (tr *testRunner) logFrames(id string, after uint64) []eventlog.Event {
	tr.t.Helper()
	var events []agent.Event
	for ev, err := range tr.log.Read(context.Background(), id, 0) {
		if err != nil {
			tr.t.Fatalf("read log: %v", err)
		}
		e, err := agent.ParseEvent(ev.Payload)
		if err != nil {
			tr.t.Fatalf("logged event %d: %v", ev.Seq, err)
		}
		e.Seq = int64(ev.Seq)
		events = append(events, e)
	}
	var out []eventlog.Event
	for _, f := range protov1.ProjectLog(events, tr.relay(id)) {
		if f.Seq > after {
			out = append(out, f)
		}
	}
	return out
}

// relay reports whether session id's host speaks the control protocol,
// as the core's record of it says.
func (tr *testRunner) relay(id string) bool {
	data, err := os.ReadFile(filepath.Join(tr.root, "sessions", id+".json"))
	if err != nil {
		tr.t.Fatalf("session record: %v", err)
	}
	var rec struct{ Relay bool }
	_ = json.Unmarshal(data, &rec)
	return rec.Relay
}

// live reports whether session id is live (not ended).
func (tr *testRunner) live(id string) bool {
	info, err := tr.core.Sessions.Get(id)
	return err == nil && info.State != sessions.StateEnded
}

// liveSessions are the ids of the live sessions.
func (tr *testRunner) liveSessions() []string {
	var ids []string
	for _, info := range tr.core.Sessions.List() {
		if info.State != sessions.StateEnded {
			ids = append(ids, info.ID)
		}
	}
	return ids
}

// shutdown is the runner's graceful stop: turns finish until ctx ends,
// then every session ends.
func (tr *testRunner) shutdown(ctx context.Context) error {
	tr.core.Sessions.Drain(ctx)
	return tr.core.Sessions.Shutdown(context.WithoutCancel(ctx))
}

// seedClient knows only the seed's frame tables: JSON objects with a type.
type seedClient struct {
	t  testing.TB
	ws *websocket.Conn
}

func (tr *testRunner) dial() *seedClient { return tr.dialFor(tr.t) }

// dialFor dials for test t, which may not be the runner's own (a fuzz
// target's input, say).
func (tr *testRunner) dialFor(t testing.TB) *seedClient {
	t.Helper()
	c, err := tr.tryDialFor(t)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (tr *testRunner) tryDial() (*seedClient, error) { return tr.tryDialFor(tr.t) }

func (tr *testRunner) tryDialFor(t testing.TB) (*seedClient, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, tr.url, nil)
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(64 << 20)
	t.Cleanup(func() { ws.CloseNow() })
	return &seedClient{t: t, ws: ws}, nil
}

func (c *seedClient) send(v any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	c.sendRaw(string(b))
}

func (c *seedClient) sendRaw(s string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *seedClient) next() map[string]any {
	c.t.Helper()
	m, _, err := c.read(20 * time.Second)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return m
}

// read returns the next frame, decoded and raw.
func (c *seedClient) read(timeout time.Duration) (map[string]any, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, data, err := c.ws.Read(ctx)
	if err != nil {
		return nil, nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, data, fmt.Errorf("frame %s: %v", data, err)
	}
	return m, data, nil
}

// until reads frames up to the first of type typ.
func (c *seedClient) until(typ string) []map[string]any {
	c.t.Helper()
	var got []map[string]any
	for {
		f := c.next()
		got = append(got, f)
		if f["type"] == typ {
			return got
		}
	}
}

// expectClosed reads until the runner closes the connection and returns
// the frames read meanwhile and the close status.
func (c *seedClient) expectClosed() ([]map[string]any, websocket.StatusCode) {
	c.t.Helper()
	var got []map[string]any
	for {
		m, _, err := c.read(20 * time.Second)
		if err != nil {
			if st := websocket.CloseStatus(err); st != -1 {
				return got, st
			}
			c.t.Fatalf("read: %v (wanted a close)", err)
		}
		got = append(got, m)
	}
}

// open sends init for workspace ws and returns the ready frame.
func (c *seedClient) open(ws string, opts map[string]any) map[string]any {
	c.t.Helper()
	init := map[string]any{"type": "init", "protocol_version": 1, "workspace_id": ws}
	if opts != nil {
		init["session_opts"] = opts
	}
	c.send(init)
	ready := c.next()
	if ready["type"] != "ready" {
		c.t.Fatalf("wanted ready, got %v", ready)
	}
	return ready
}

func (c *seedClient) query(id, prompt string) {
	c.t.Helper()
	c.send(map[string]any{"type": "query", "request_id": id, "prompt": prompt})
}

// seqOf is a frame's seq (0 without one).
func seqOf(f map[string]any) uint64 {
	n, _ := f["seq"].(float64)
	return uint64(n)
}

func str(f map[string]any, key string) string {
	s, _ := f[key].(string)
	return s
}

// payloadType is the type of the agent line a message frame carries.
func payloadType(f map[string]any) string {
	var p struct {
		Type    string `json:"type"`
		Subtype string `json:"subtype"`
	}
	_ = json.Unmarshal(agentLine(f), &p)
	if p.Subtype != "" {
		return p.Type + "/" + p.Subtype
	}
	return p.Type
}

// agentLine is the agent's line a message frame carries: the payload
// string, or (relay sessions) the line embedded as is.
func agentLine(f map[string]any) []byte {
	if line, ok := f["line"]; ok {
		b, _ := json.Marshal(line)
		return b
	}
	return []byte(str(f, "payload"))
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mockProc is a mock CLI process started by this test binary.
type mockProc struct {
	pid  int
	cwd  string
	args []string
}

// mockProcs lists the live mock processes that are children of this
// process: their environment carries the mock's marker. Zombies (exited,
// not yet reaped) are left out.
func mockProcs() []mockProc {
	entries, _ := os.ReadDir("/proc")
	var out []mockProc
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, state, ok := procStat(pid)
		if !ok || ppid != self || state == "Z" {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(env, []byte("\x00"+mockclaude.EnvMain+"=1\x00")) && !bytes.HasPrefix(env, []byte(mockclaude.EnvMain+"=1\x00")) {
			continue
		}
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, mockProc{pid: pid, cwd: cwd, args: strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")})
	}
	return out
}

// procStat reads a process's parent and state from /proc/PID/stat.
func procStat(pid int) (ppid int, state string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(fields[1])
	return ppid, fields[0], err == nil
}

// processGone reports whether pid no longer exists, not even as a zombie.
func processGone(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return os.IsNotExist(err)
}

// mockIn waits for the one mock process working in dir.
func mockIn(t *testing.T, dir string) mockProc {
	t.Helper()
	var found []mockProc
	eventually(t, 10*time.Second, "a mock process in "+dir, func() bool {
		found = found[:0]
		for _, p := range mockProcs() {
			if p.cwd == dir {
				found = append(found, p)
			}
		}
		return len(found) == 1
	})
	return found[0]
}

// workspaceDir is where the runner puts workspace id.
func (tr *testRunner) workspaceDir(id string) string {
	real, err := filepath.EvalSymlinks(filepath.Join(tr.root, "ws"))
	if err != nil {
		tr.t.Fatal(err)
	}
	return filepath.Join(real, id)
}

// noMocksLeft fails unless every mock process of this test binary is gone.
func noMocksLeft(t *testing.T, within time.Duration) {
	t.Helper()
	eventually(t, within, "mock processes still running", func() bool { return len(mockProcs()) == 0 })
}

func runGit(gitDir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"--git-dir=" + gitDir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	return cmd.CombinedOutput()
}
