package protov1_test

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/mockclaude"
	v1 "github.com/tetherhq/tether/protocol/runnerv1"
)

// readFrames reads one WebSocket message and returns the frames it
// carries, numbered: a batch's frames, or the one frame.
func (c *seedClient) readFrames() (frames []v1.Frame, batch bool) {
	c.t.Helper()
	_, raw, err := c.read(20 * time.Second)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	f, err := v1.Decode(raw)
	if err != nil {
		c.t.Fatalf("frame %s: %v", raw, err)
	}
	if b, ok := f.(v1.Batch); ok {
		if _, items, ok := v1.SplitBatch(raw, nil); !ok || len(items) != len(b.Frames) {
			c.t.Fatalf("a batch the fast path cannot read: %s", raw)
		}
		return b.Frames, true
	}
	return []v1.Frame{f}, false
}

// relayTurnLogged starts a relay session whose turn of n messages runs
// while no host is attached, and returns its id once the turn is logged.
func relayTurnLogged(t *testing.T, tr *testRunner, workspaceID string) string {
	t.Helper()
	c := tr.dial()
	c.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": workspaceID, "host_control": true})
	id := str(c.next(), "session_id")
	line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "go"}})
	c.send(map[string]any{"type": "input", "line": string(line)})
	c.ws.CloseNow()
	waitTurnLogged(t, tr, id)
	return id
}

// waitTurnLogged waits until the session's last logged frame is a done.
func waitTurnLogged(t *testing.T, tr *testRunner, id string) {
	t.Helper()
	eventually(t, 20*time.Second, "the turn to complete unattended", func() bool {
		evs := tr.logFrames(id, 0)
		var f map[string]any
		_ = json.Unmarshal(evs[len(evs)-1].Payload, &f)
		return f["type"] == "done"
	})
}

// resume reattaches to a session from seq after and reads its ready.
func (tr *testRunner) resume(workspaceID, id string, after uint64, hostControl, batch bool) *seedClient {
	tr.t.Helper()
	c := tr.dial()
	init := resumeInit(workspaceID, id, after)
	if hostControl {
		init["host_control"] = true
	}
	if batch {
		init["batch"] = true
	}
	c.send(init)
	if r := c.next(); r["type"] != "ready" || r["resumed"] != true {
		tr.t.Fatalf("ready = %v", r)
	}
	return c
}

// checkFramesAgainstLog checks that frames are the log's frames after
// `after`, numbered as the log numbers them.
func checkFramesAgainstLog(t *testing.T, tr *testRunner, id string, after uint64, frames []v1.Frame) {
	t.Helper()
	evs := tr.logFrames(id, after)
	if len(frames) != len(evs) {
		t.Fatalf("got %d frames after seq %d, the log has %d", len(frames), after, len(evs))
	}
	for i, ev := range evs {
		want, err := v1.Decode(v1.WithSeq(nil, ev.Payload, ev.Seq))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(frames[i], want) {
			t.Fatalf("frame %d:\n got %+v\nwant %+v", i, frames[i], want)
		}
	}
}

// Batch frames go only to a host-control connection that asks for them;
// whichever way a host reads the session, it gets the log's frames, each
// once and in order.
func TestBatchFramesOnlyForHostsThatAsk(t *testing.T) {
	tr := startRunnerWith(t, runnerOpts{scenario: "text", grace: time.Minute,
		env: map[string]string{mockclaude.EnvN: "400", mockclaude.EnvDelayMS: "0"}})
	id := relayTurnLogged(t, tr, "batches")
	for _, tc := range []struct {
		name               string
		hostControl, batch bool
	}{
		{"seed client", false, false},
		{"seed client asking for batches", false, true},
		{"host control without batches", true, false},
		{"host control with batches", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tr.resume("batches", id, 0, tc.hostControl, tc.batch)
			c.t = t
			defer c.ws.CloseNow()
			var got []v1.Frame
			batches := 0
			for len(got) == 0 || got[len(got)-1].FrameType() != v1.TypeDone {
				frames, batch := c.readFrames()
				if batch {
					batches++
				}
				got = append(got, frames...)
			}
			if want := tc.hostControl && tc.batch; (batches > 0) != want {
				t.Fatalf("%d batch frames (want some: %v)", batches, want)
			}
			t.Logf("%d frames in %d batch frames", len(got), batches)
			checkFramesAgainstLog(t, tr, id, 0, got)
		})
	}
}

// A host that saw only part of a batch (it dropped in the middle of one)
// resumes from the last frame it handled and gets the rest exactly once.
func TestResumeInTheMiddleOfABatch(t *testing.T) {
	tr := startRunnerWith(t, runnerOpts{scenario: "text", grace: time.Minute,
		env: map[string]string{mockclaude.EnvN: "400", mockclaude.EnvDelayMS: "0"}})
	id := relayTurnLogged(t, tr, "midbatch")
	c := tr.resume("midbatch", id, 0, true, true)
	var got []v1.Frame
	for {
		frames, batch := c.readFrames()
		if batch && len(frames) >= 3 {
			got = append(got, frames[:len(frames)/2]...) // handled half, then dropped
			break
		}
		got = append(got, frames...)
	}
	c.ws.CloseNow()
	last := v1.FrameSeq(got[len(got)-1])
	t.Logf("dropped after seq %d, in a batch", last)

	c = tr.resume("midbatch", id, last, true, true)
	for got[len(got)-1].FrameType() != v1.TypeDone {
		frames, _ := c.readFrames()
		if first := v1.FrameSeq(frames[0]); first <= v1.FrameSeq(got[len(got)-1]) {
			t.Fatalf("frame %d after %d", first, v1.FrameSeq(got[len(got)-1]))
		}
		got = append(got, frames...)
	}
	checkFramesAgainstLog(t, tr, id, 0, got)
}

// Live frames reach a batch host as they come, in order, batched or not.
func TestBatchHostLive(t *testing.T) {
	const n = 300
	tr := startRunnerWith(t, runnerOpts{scenario: "text", grace: time.Minute,
		env: map[string]string{mockclaude.EnvN: strconv.Itoa(n), mockclaude.EnvDelayMS: "0"}})
	c := tr.dial()
	c.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "live", "host_control": true, "batch": true})
	ready := c.next()
	id := str(ready, "session_id")
	line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "go"}})
	c.send(map[string]any{"type": "input", "line": string(line), "n": 1})
	var got []v1.Frame
	for len(got) == 0 || got[len(got)-1].FrameType() != v1.TypeDone {
		frames, _ := c.readFrames()
		got = append(got, frames...)
	}
	checkFramesAgainstLog(t, tr, id, seqOf(ready), got)
	if len(got) != n+3 {
		t.Fatalf("%d frames for a turn of %d messages", len(got), n)
	}
}

// A session opened without host control sends no batches, whatever a
// resuming connection asks for.
func TestNoBatchesInSeedSessions(t *testing.T) {
	tr := startRunnerWith(t, runnerOpts{scenario: "text", grace: time.Minute,
		env: map[string]string{mockclaude.EnvN: "300", mockclaude.EnvDelayMS: "0"}})
	c := tr.dial()
	ready := c.open("seed", nil)
	id := str(ready, "session_id")
	c.query("q1", "go")
	c.ws.CloseNow()
	waitTurnLogged(t, tr, id)
	c = tr.resume("seed", id, 0, true, true)
	var got []v1.Frame
	for len(got) == 0 || got[len(got)-1].FrameType() != v1.TypeDone {
		frames, batch := c.readFrames()
		if batch {
			t.Fatal("a batch frame in a session without host control")
		}
		got = append(got, frames...)
	}
	checkFramesAgainstLog(t, tr, id, 0, got)
}

// A numbered input line reaches the agent once: a host that comes back
// learns from its ready the last line given, and a line it sends again is
// passed over.
func TestNumberedInputGivenOnceAcrossReconnects(t *testing.T) {
	tr := startRunnerWith(t, runnerOpts{scenario: "text", grace: time.Minute})
	c := tr.dial()
	c.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "numbered", "host_control": true})
	id := str(c.next(), "session_id")
	line := func(text string) string {
		b, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
		return string(b)
	}
	c.send(map[string]any{"type": "input", "line": line("one"), "n": 1})
	c.send(map[string]any{"type": "input", "line": line("one"), "n": 1}) // a resend on the same connection
	c.ws.CloseNow()
	waitTurnLogged(t, tr, id)

	logged := tr.logFrames(id, 0)
	c = tr.dial()
	c.send(resumeInit("numbered", id, logged[len(logged)-1].Seq)) // nothing to replay
	if r := c.next(); r["type"] != "ready" || r["input_seq"] != float64(1) {
		t.Fatalf("ready after line 1: %v, want input_seq 1", r)
	}
	c.send(map[string]any{"type": "input", "line": line("one"), "n": 1})
	c.send(map[string]any{"type": "input", "line": line("two"), "n": 2})
	c.until("done")
	c.ws.CloseNow()
	waitTurnLogged(t, tr, id)
	dones := 0
	for _, e := range tr.logFrames(id, 0) {
		var f map[string]any
		if json.Unmarshal(e.Payload, &f) == nil && f["type"] == "done" {
			dones++
		}
	}
	if dones != 2 {
		t.Fatalf("%d turns for lines 1, 1, 1 and 2; want 2", dones)
	}
}
