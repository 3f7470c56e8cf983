package protov1_test

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/internal/mockclaude"
)

// untilRaw reads frames up to the first of type typ, keeping them raw.
func (c *seedClient) untilRaw(typ string) []frame {
	c.t.Helper()
	var got []frame
	for {
		m, raw, err := c.read(20 * time.Second)
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		got = append(got, frame{m, raw})
		if m["type"] == typ {
			return got
		}
	}
}

// untilMessage reads frames up to the first message carrying an agent
// line of type typ ("system/init", "assistant", …).
func (c *seedClient) untilMessage(typ string) []map[string]any {
	c.t.Helper()
	var got []map[string]any
	for {
		f := c.next()
		got = append(got, f)
		if f["type"] == "message" && payloadType(f) == typ {
			return got
		}
	}
}

// kill -9 of the CLI in the middle of a turn: the host hears agent_exited
// for the turn at once, the session ends, nothing is left running.
func TestAgentKilledMidTurn(t *testing.T) {
	for _, relay := range []bool{false, true} {
		name := "sdk"
		if relay {
			name = "relay"
		}
		t.Run(name, func(t *testing.T) {
			tr := startRunnerWith(t, runnerOpts{scenario: "slow", grace: time.Minute,
				env: map[string]string{mockclaude.EnvDelayMS: "100"}})
			c := tr.dial()
			c.t = t
			c.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "doomed", "host_control": relay})
			ready := c.next()
			id := str(ready, "session_id")
			if relay {
				line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "go"}})
				c.send(map[string]any{"type": "input", "line": string(line)})
			} else {
				c.query("q1", "go")
			}
			c.untilMessage("system/init") // the turn is under way; its text takes 5 s
			p := mockIn(t, tr.workspaceDir("doomed"))
			if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			f := c.next()
			if f["type"] != "error" || f["code"] != "agent_exited" {
				t.Fatalf("after kill -9: %v", f)
			}
			if took := time.Since(killed); took > time.Second {
				t.Errorf("agent_exited came %v after the kill", took)
			}
			if !relay && f["request_id"] != "q1" {
				t.Errorf("agent_exited for request %v", f["request_id"])
			}
			if !strings.Contains(str(f, "details"), "kill") {
				t.Errorf("details do not say the agent was killed: %q", f["details"])
			}
			// The session is over: the runner closes the connection cleanly.
			rest, st := c.expectClosed()
			if len(rest) != 0 || st != websocket.StatusNormalClosure {
				t.Fatalf("after agent_exited: frames %v, close %v", rest, st)
			}
			eventually(t, 5*time.Second, "the killed agent to be reaped", func() bool { return processGone(p.pid) })
			noMocksLeft(t, 5*time.Second)
			eventually(t, 5*time.Second, "the session to end", func() bool {
				live := tr.live(id)
				return !live
			})
			// The error stays in the log for a host that reconnects.
			evs := tr.logFrames(id, 0)
			var last map[string]any
			_ = json.Unmarshal(evs[len(evs)-1].Payload, &last)
			if last["code"] != "agent_exited" {
				t.Fatalf("last logged frame %s", evs[len(evs)-1].Payload)
			}
		})
	}
}

// A session outlives its connection for the grace period: a host that
// comes back in time finds the same agent; one that does not finds the
// agent gone, and resuming restarts it with --resume in the same workspace,
// its seqs going on from the old last.
func TestGracePeriod(t *testing.T) {
	const grace = 700 * time.Millisecond
	tr := startRunnerWith(t, runnerOpts{scenario: "text", grace: grace})
	wsDir := tr.workspaceDir("patient")
	c := tr.dial()
	ready := c.open("patient", nil)
	id := str(ready, "session_id")
	frames := c.turn("q1")
	last := seqOf(frames[len(frames)-1])
	p := mockIn(t, wsDir)
	if flag(p.args, "--resume") != "" || flag(p.args, "--session-id") != id {
		t.Fatalf("first agent's args %q", p.args)
	}

	// Back within the grace period: the same agent.
	c.ws.CloseNow()
	c = tr.dial()
	c.send(resumeInit("patient", id, last))
	if r := c.next(); r["type"] != "ready" || r["resumed"] != true {
		t.Fatalf("reattach: %v", r)
	}
	frames = c.turn("q2")
	last = seqOf(frames[len(frames)-1])
	if q := mockIn(t, wsDir); q.pid != p.pid {
		t.Fatalf("reattaching changed the agent: pid %d, was %d", q.pid, p.pid)
	}

	// Gone for longer: the agent is stopped after the grace period.
	c.ws.CloseNow()
	left := time.Now()
	eventually(t, grace+10*time.Second, "the agent to stop after the grace period", func() bool { return processGone(p.pid) })
	if waited := time.Since(left); waited < grace {
		t.Fatalf("agent stopped %v after the host left, before the grace period (%v)", waited, grace)
	}
	eventually(t, 5*time.Second, "the session to end", func() bool {
		live := tr.live(id)
		return !live
	})
	noMocksLeft(t, time.Second)
	// The session's end is its last event; it makes no frame.
	if frames := tr.logFrames(id, last); len(frames) != 0 {
		t.Fatalf("frames after the session ended at %d: %s", last, frames[0].Payload)
	}

	// Resume: a new agent with --resume, same workspace, seqs go on.
	c = tr.dial()
	c.send(resumeInit("patient", id, last))
	r := c.next()
	if r["type"] != "ready" || r["resumed"] == true || r["session_id"] != id || seqOf(r) <= last {
		t.Fatalf("resume after the grace period: %v (last seq %d)", r, last)
	}
	q := mockIn(t, wsDir)
	if flag(q.args, "--resume") != id {
		t.Fatalf("restarted agent's args %q lack --resume %s", q.args, id)
	}
	frames = c.turn("q3")
	prev := seqOf(r)
	for i, f := range frames {
		if seqOf(f) <= prev {
			t.Fatalf("frame %d has seq %v after %d", i, f["seq"], prev)
		}
		prev = seqOf(f)
	}
	var init struct {
		SessionID string `json:"session_id"`
		Cwd       string `json:"cwd"`
	}
	_ = json.Unmarshal([]byte(str(frames[0], "payload")), &init)
	if init.SessionID != id || init.Cwd != wsDir {
		t.Fatalf("restarted agent's system/init: %+v, want session %s in %s", init, id, wsDir)
	}
}

// A restarted runner resumes a session from its durable log: frames after
// the host's last seq are replayed from disk, the agent restarts with
// --resume, seqs go on.
func TestResumeAfterRunnerRestart(t *testing.T) {
	opts := runnerOpts{scenario: "text", grace: time.Minute, env: map[string]string{mockclaude.EnvN: "20"}}
	tr := startRunnerWith(t, opts)
	c := tr.dial()
	ready := c.open("durable", nil)
	id := str(ready, "session_id")
	c.query("q1", "remember this")
	first := c.untilRaw("done")
	last := seqOf(first[len(first)-1].m)
	seen := seqOf(first[7].m) // the host saw up to here

	tr.stop() // Runner.Shutdown, listener closed, event log closed
	if _, st := c.expectClosed(); st != websocket.StatusGoingAway {
		t.Fatalf("closed with %v after shutdown, want going away", st)
	}
	noMocksLeft(t, 5*time.Second)

	opts.dir = tr.root
	tr2 := startRunnerWith(t, opts)
	c2 := tr2.dial()
	c2.send(resumeInit("durable", id, seen))
	replay := c2.untilRaw("ready")
	ready2 := replay[len(replay)-1].m
	replay = replay[:len(replay)-1]
	if ready2["session_id"] != id || ready2["resumed"] == true || seqOf(ready2) <= last {
		t.Fatalf("ready after restart: %v (last seq %d)", ready2, last)
	}
	unseen := first[8:] // what the host had not seen: every frame after seen
	if len(replay) != len(unseen) {
		t.Fatalf("replayed %d frames after seq %d, want %d", len(replay), seen, len(unseen))
	}
	for i, f := range replay {
		if string(f.raw) != string(unseen[i].raw) {
			t.Fatalf("replayed frame %d:\n got %s\nwant %s", i, f.raw, unseen[i].raw)
		}
	}
	q := mockIn(t, tr2.workspaceDir("durable"))
	if flag(q.args, "--resume") != id {
		t.Fatalf("agent after restart: args %q", q.args)
	}
	frames := c2.turn("q2")
	if seqOf(frames[0]) <= seqOf(ready2) {
		t.Fatalf("first frame after restart has seq %v, after the ready's %d", frames[0]["seq"], seqOf(ready2))
	}
}

// Shutdown lets a turn in progress finish, then stops the agent; the
// workspace gets its before and after snapshots.
func TestShutdownWaitsForTurn(t *testing.T) {
	t.Run("sdk", func(t *testing.T) { testShutdownWaitsForTurn(t, false) })
	// In a relay session the host's SDK starts the turn with a user line
	// of its own (an input frame): Shutdown waits for that turn too.
	t.Run("relay", func(t *testing.T) { testShutdownWaitsForTurn(t, true) })
}

func testShutdownWaitsForTurn(t *testing.T, relay bool) {
	tr := startRunnerWith(t, runnerOpts{scenario: "slow", grace: time.Minute,
		env: map[string]string{mockclaude.EnvDelayMS: "20"}}) // a turn takes 1 s
	c := tr.dial()
	c.t = t
	c.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "snap", "host_control": relay})
	ready := c.next()
	id := str(ready, "session_id")
	if relay {
		line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "take your time"}})
		c.send(map[string]any{"type": "input", "line": string(line)})
	} else {
		c.query("q1", "take your time")
	}
	c.untilMessage("system/init")
	p := mockIn(t, tr.workspaceDir("snap"))

	shutdown := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shutdown <- tr.shutdown(ctx)
	}()
	// New sessions are refused meanwhile.
	eventually(t, 5*time.Second, "new sessions to be refused", func() bool {
		late, err := tr.tryDial()
		if err != nil {
			return false
		}
		late.t = t
		late.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "late"})
		frames, _ := late.expectClosed()
		return len(frames) == 1 && frames[0]["code"] == "shutting_down"
	})
	rest, st := c.expectClosed()
	if err := <-shutdown; err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	done := rest[len(rest)-1]
	if done["type"] != "done" || done["reason"] != "completed" || st != websocket.StatusGoingAway {
		t.Fatalf("turn cut short by shutdown after %v: last frame %v, close %v", took, done, st)
	}
	if !processGone(p.pid) {
		t.Fatal("agent still running after Shutdown returned")
	}
	subjects := tr.gitLog("snap")
	if len(subjects) < 2 || subjects[0] != "tether: after session "+id || subjects[1] != "tether: before session "+id {
		t.Fatalf("snapshots: %q", subjects)
	}
}

// Shutdown does not wait past its deadline: the turn is interrupted and
// the agent stopped.
func TestShutdownDeadline(t *testing.T) {
	tr := startRunnerWith(t, runnerOpts{scenario: "slow", grace: time.Minute,
		env: map[string]string{mockclaude.EnvDelayMS: "500"}}) // a turn takes 25 s
	c := tr.dial()
	ready := c.open("cut", nil)
	id := str(ready, "session_id")
	c.query("q1", "forever")
	c.untilMessage("system/init")
	p := mockIn(t, tr.workspaceDir("cut"))

	const deadline = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	if err := tr.shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if took < deadline || took > deadline+5*time.Second {
		t.Fatalf("Shutdown took %v with a %v deadline", took, deadline)
	}
	if !processGone(p.pid) {
		t.Fatal("agent still running after Shutdown returned")
	}
	// The turn was interrupted: it ends in error, never as completed, and
	// the agent is not reported as having exited.
	rest, st := c.expectClosed()
	for _, f := range rest {
		if f["type"] == "done" && f["reason"] != "error" || f["type"] == "error" {
			t.Fatalf("frame after a cut turn: %v", f)
		}
	}
	if done := rest[len(rest)-1]; done["type"] != "done" {
		t.Errorf("the interrupted turn has no done: last frame %v", done)
	}
	if st != websocket.StatusGoingAway {
		t.Fatalf("closed with %v, want going away (come back and resume)", st)
	}
	if subjects := tr.gitLog("cut"); subjects[0] != "tether: after session "+id {
		t.Fatalf("snapshots: %q", subjects)
	}
}

// The after-session snapshot holds what the agent wrote.
func TestSnapshotHoldsAgentWork(t *testing.T) {
	tr := startRunner(t, "demo", time.Minute)
	c := tr.dial()
	ready := c.open("work", map[string]any{"permission_mode": "acceptEdits"})
	c.turn("q1")
	c.send(map[string]any{"type": "stop"})
	c.expectClosed()
	out, err := runGit(tr.root+"/ws/.tether/git/work.git", "show", "HEAD:hello.txt")
	if err != nil || !strings.Contains(string(out), "Hello from the tether mock") {
		t.Fatalf("hello.txt in the after snapshot: %v\n%s", err, out)
	}
	out, _ = runGit(tr.root+"/ws/.tether/git/work.git", "show", "HEAD~1:hello.txt")
	if !strings.Contains(string(out), "does not exist") && !strings.Contains(string(out), "exists on disk, but not in") {
		t.Fatalf("hello.txt already in the before snapshot: %s", out)
	}
	if subjects := tr.gitLog("work"); subjects[0] != "tether: after session "+str(ready, "session_id") {
		t.Fatalf("snapshots: %q", subjects)
	}
}

// flag is the value of --name in args ("--name v" or "--name=v").
func flag(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
