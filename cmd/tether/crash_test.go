package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/transport/remote"
)

// frameSeq is a frame's seq (0 if none).
func frameSeq(f map[string]any) uint64 {
	n, _ := f["seq"].(float64)
	return uint64(n)
}

// readSeqs reads frames until one with seq `until` (or, with until 0,
// until the connection fails) and returns their seqs. A done frame must
// say the turn completed.
func readSeqs(t *testing.T, ws *websocket.Conn, until uint64) []uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var seqs []uint64
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			if until != 0 {
				t.Fatalf("connection failed before seq %d (after %d frames): %v", until, len(seqs), err)
			}
			return seqs
		}
		var f map[string]any
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("frame %s: %v", data, err)
		}
		if f["type"] == "done" && f["reason"] != "completed" || f["type"] == "error" {
			t.Fatalf("frame %s", data)
		}
		seqs = append(seqs, frameSeq(f))
		if until != 0 && frameSeq(f) == until {
			return seqs
		}
	}
}

// readUntilClosed reads frames until the connection fails and returns
// their seqs; it closes reached once it has read n frames.
func readUntilClosed(ws *websocket.Conn, n int, reached chan<- struct{}) []uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var seqs []uint64
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return seqs
		}
		var f map[string]any
		_ = json.Unmarshal(data, &f)
		seqs = append(seqs, frameSeq(f))
		if len(seqs) == n {
			close(reached)
		}
	}
}

// untilDone reads frames up to the done of request reqID and returns
// their seqs.
func untilDone(t *testing.T, ws *websocket.Conn, reqID string) []uint64 {
	t.Helper()
	var seqs []uint64
	for {
		f := wsNext(t, ws)
		if f["type"] == "error" || f["type"] == "done" && f["reason"] != "completed" {
			t.Fatalf("frame %v", f)
		}
		seqs = append(seqs, frameSeq(f))
		if f["type"] == "done" && f["request_id"] == reqID {
			return seqs
		}
	}
}

// span is the seqs from..to.
func span(from, to uint64) []uint64 {
	var s []uint64
	for seq := from; seq <= to; seq++ {
		s = append(s, seq)
	}
	return s
}

// logLast reads the last seq of a session in the event log of a runner
// that is not running.
func logLast(t *testing.T, data, id string) uint64 {
	t.Helper()
	l, err := eventlog.Open(filepath.Join(data, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	last, err := l.Last(id)
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// waitGone waits for a process to end (a zombie counts: who reaps an
// orphan is up to the container).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d outlived its runner", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func dialRunner(t *testing.T, addr string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/sessions", bearer())
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(1 << 20)
	t.Cleanup(func() { ws.CloseNow() })
	return ws
}

// A runner killed with SIGKILL mid-turn loses from its log the frames it
// sent in its last moments (appends are group-committed), while the host
// has them. The host resumes on the restarted runner with the last seq it
// saw: the session numbers on after it, so the host's stream has no seq
// twice and its seqs keep rising (events that make no frame leave gaps),
// and a replay from the log passes over the lost frames. The agent dies
// with its runner.
//
// The turn streams a chunk every 20 ms, which the host reads as it comes,
// and the log commits every 500 ms, so a crash nearly always loses frames
// the host has; a crash that happens to lose none is resumed as usual and
// the test crashes the runner again.
func TestServeResumesAfterSIGKILL(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	cli := mockCLI(t, "slow", 20)
	// A port outside the ephemeral range, which the restarts listen on too.
	addr := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0])
	args := []string{"--cli", cli, "--data", data, "--log-commit-window", "500ms", "--addr", addr}
	p := startServe(t, cleanEnv(), args...)
	ws := dialRunner(t, p.addr)
	wsSend(t, ws, map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "crash",
		"session_opts": map[string]any{"include_partial_messages": true}})
	ready := wsNext(t, ws)
	id, _ := ready["session_id"].(string)
	if ready["type"] != "ready" || frameSeq(ready) != 1 {
		t.Fatalf("init: %v\n%s", ready, p.log())
	}
	last := frameSeq(ready) // the last seq the host has
	for attempt := 1; ; attempt++ {
		seen := crashMidTurn(t, p, ws, "q"+strconv.Itoa(attempt), last)
		logged := logLast(t, data, id)
		p = startServe(t, cleanEnv(), args...)
		ws = dialRunner(t, p.addr)
		wsSend(t, ws, map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "crash", "resume": id, "last_seq": seen})
		if logged < seen {
			t.Logf("crash %d: the host saw up to seq %d, the log kept %d", attempt, seen, logged)
			checkResumeAcrossLoss(t, p, id, ws, seen, logged)
			return
		}
		// Nothing lost: what the host missed is replayed, then the
		// restarted agent's ready.
		got := readUntilReady(t, ws)
		missed, again := got[:len(got)-1], got[len(got)-1]
		if !rising(got, seen) || len(missed) > 0 && missed[len(missed)-1] > logged || again <= logged {
			t.Fatalf("resume after crash %d (host at %d, log at %d): seqs %v", attempt, seen, logged, got)
		}
		if attempt == 5 {
			t.Fatal("in 5 crashes the log never lost a frame the host had")
		}
		last = again
	}
}

// rising reports whether seqs rise, each past the one before, the first
// past after.
func rising(seqs []uint64, after uint64) bool {
	for _, seq := range seqs {
		if seq <= after {
			return false
		}
		after = seq
	}
	return true
}

// readUntilReady reads frames up to a ready and returns their seqs.
func readUntilReady(t *testing.T, ws *websocket.Conn) []uint64 {
	t.Helper()
	var seqs []uint64
	for {
		f := wsNext(t, ws)
		if f["type"] == "error" {
			t.Fatalf("frame %v", f)
		}
		seqs = append(seqs, frameSeq(f))
		if f["type"] == "ready" {
			return seqs
		}
	}
}

// crashMidTurn starts turn reqID, kills the runner while the host reads
// it (from seq first on), and returns the last seq the host received. The
// runner's agent must die with it.
func crashMidTurn(t *testing.T, p *serveProc, ws *websocket.Conn, reqID string, after uint64) uint64 {
	t.Helper()
	wsSend(t, ws, map[string]any{"type": "query", "request_id": reqID, "prompt": "go"})
	// Past the first commit, which holds the session's start; the host
	// reads on while the runner dies.
	streaming := make(chan struct{})
	read := make(chan []uint64, 1)
	go func() { read <- readUntilClosed(ws, 30, streaming) }()
	select {
	case <-streaming:
	case got := <-read:
		t.Fatalf("the connection failed after seqs %v", got)
	}
	agents := children(p.cmd.Process.Pid)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	got := <-read
	if len(got) < 30 || !rising(got, after) {
		t.Fatalf("frames up to the crash: %v, not rising after seq %d", got, after)
	}
	p.wait(waitLimit)
	if len(agents) != 1 {
		t.Fatalf("the runner had %d children, want its agent", len(agents))
	}
	waitGone(t, agents[0])
	return got[len(got)-1]
}

// checkResumeAcrossLoss checks a session resumed by a host that saw up to
// seq seen, of which the log kept only up to logged: the stream numbers on
// after seen, and another host replaying from the log passes over the
// lost frames.
func checkResumeAcrossLoss(t *testing.T, p *serveProc, id string, ws *websocket.Conn, seen, logged uint64) {
	t.Helper()
	ready := wsNext(t, ws)
	if ready["type"] != "ready" || ready["session_id"] != id || ready["resumed"] == true || frameSeq(ready) <= seen {
		t.Fatalf("resume after the crash: %v, want a new agent's ready after seq %d\n%s", ready, seen, p.log())
	}
	wsSend(t, ws, map[string]any{"type": "query", "request_id": "after", "prompt": "again"})
	turn := untilDone(t, ws, "after")
	end := turn[len(turn)-1]
	if !rising(turn, frameSeq(ready)) {
		t.Fatalf("the turn after the crash has seqs %v, after the ready's %d", turn, frameSeq(ready))
	}
	ws3 := dialRunner(t, p.addr)
	from := max(logged, 5) - 5
	wsSend(t, ws3, map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "crash", "resume": id, "last_seq": from})
	if f := wsNext(t, ws3); f["type"] != "ready" || f["resumed"] != true || frameSeq(f) < end {
		t.Fatalf("resume of the live session: %v", f)
	}
	// The replay: what the log kept of the old agent, nothing of what it
	// lost, then the new agent's ready and turn.
	got := readSeqs(t, ws3, end)
	want := append([]uint64{frameSeq(ready)}, turn...)
	if !rising(got, from) || !slices.Equal(got[len(got)-len(want):], want) {
		t.Fatalf("replay across the lost frames: %v\nwant rising after %d, ending %v", got, from, want)
	}
	for _, seq := range got {
		if seq > logged && seq <= seen {
			t.Fatalf("replay across the lost frames: %v has %d, which the log lost", got, seq)
		}
	}
}

// The SDK through a runner that is killed mid-turn and restarted: the
// remote transport resumes the session instead of failing, or retrying
// until it gives up; the turn the killed agent was running ends with an
// error result (no caller waits forever for it), and the conversation goes
// on with the restarted agent.
func TestServeSDKSurvivesSIGKILL(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	// A turn long enough that the runner is still relaying it when the
	// host, at its 100th message, kills it: with 3,000 messages the runner
	// had now and then logged the whole turn by then (20 ms), and the
	// resumed host rightly got its result.
	cli := mockCLI(t, "text", 0, mockclaude.EnvN+"=100000")
	addr := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0]) // the restart's too
	p := startServe(t, cleanEnv(), "--cli", cli, "--data", data, "--addr", addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()
	c, err := claude.Connect(ctx, claude.Options{Runner: &claude.RunnerOptions{
		URL: "ws://" + p.addr + "/sessions", Token: testToken, WorkspaceID: "sdk-crash", ReconnectFor: waitLimit}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Query(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	n := 0
	var last *claude.ResultMessage
	for msg, err := range c.Receive(ctx) {
		if err != nil {
			t.Fatalf("after %d messages: %v", n, err)
		}
		if n++; n == 100 {
			if err := p.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			p.wait(waitLimit)
			startServe(t, cleanEnv(), "--cli", cli, "--data", data, "--addr", p.addr)
		}
		last, _ = msg.(*claude.ResultMessage)
	}
	if n < 100 || last == nil || !last.IsError || !slices.Contains(last.Errors, remote.ErrTurnLost.Error()) {
		t.Fatalf("the turn cut by the crash ended after %d messages with %+v", n, last)
	}
	if err := c.Query(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	n = 0
	for msg, err := range c.Receive(ctx) {
		if err != nil {
			t.Fatalf("the next turn, after %d messages: %v", n, err)
		}
		n++
		last, _ = msg.(*claude.ResultMessage)
	}
	if last == nil || last.IsError || n < 3000 {
		t.Fatalf("the next turn: %d messages, result %+v", n, last)
	}
}
