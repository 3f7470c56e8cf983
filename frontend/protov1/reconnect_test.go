package protov1_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/internal/mockclaude"
)

// frame is one frame as received: decoded and raw.
type frame struct {
	m   map[string]any
	raw []byte
}

// resumeInit is the init a reconnecting host sends.
func resumeInit(workspaceID, sessionID string, lastSeq uint64) map[string]any {
	return map[string]any{"type": "init", "protocol_version": 1, "workspace_id": workspaceID, "resume": sessionID, "last_seq": lastSeq}
}

// checkAgainstLog checks that frames are exactly the log's frames after
// `after`, as the runner numbers them on the wire.
func checkAgainstLog(t *testing.T, tr *testRunner, id string, after uint64, frames []frame) {
	t.Helper()
	evs := tr.logFrames(id, after)
	if len(evs) < len(frames) {
		t.Fatalf("received %d frames after seq %d, the log has %d", len(frames), after, len(evs))
	}
	for i, f := range frames {
		ev := evs[i]
		want := fmt.Sprintf(`{"seq":%d,%s`, ev.Seq, ev.Payload[1:])
		if string(f.raw) != want {
			t.Fatalf("frame %d:\n got %s\nwant %s", i, f.raw, want)
		}
	}
}

// checkTextTurn checks the message payloads of a "text" turn of n
// messages: system/init, n distinct assistant messages, the result, done.
func checkTextTurn(t *testing.T, frames []frame, requestID string, n int) {
	t.Helper()
	if len(frames) != n+3 {
		t.Fatalf("%d frames for a turn of %d messages", len(frames), n)
	}
	uuids := map[string]bool{}
	for i, f := range frames {
		want := "assistant"
		switch i {
		case 0:
			want = "system/init"
		case n + 1:
			want = "result/success"
		case n + 2:
			if f.m["type"] != "done" || f.m["request_id"] != requestID || f.m["reason"] != "completed" {
				t.Fatalf("last frame %s", f.raw)
			}
			continue
		}
		if f.m["type"] != "message" || f.m["request_id"] != requestID || payloadType(f.m) != want {
			t.Fatalf("frame %d is %s, want a %s message", i, f.raw, want)
		}
		var p struct {
			UUID string `json:"uuid"`
		}
		_ = json.Unmarshal([]byte(str(f.m, "payload")), &p)
		if p.UUID == "" || uuids[p.UUID] {
			t.Fatalf("frame %d: uuid %q missing or seen before", i, p.UUID)
		}
		uuids[p.UUID] = true
	}
}

// A host that drops its connection at random points and resumes with the
// last seq it saw gets every frame exactly once and in order, and then the
// live frames.
func TestReconnectWithoutLoss(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 42))
	const n = 2000
	tr := startRunnerWith(t, runnerOpts{scenario: "text", grace: time.Minute,
		env: map[string]string{mockclaude.EnvN: strconv.Itoa(n), mockclaude.EnvDelayMS: "0"}})
	c := tr.dial()
	ready := c.open("reconnect", nil)
	id := str(ready, "session_id")
	last := seqOf(ready)

	c.query("q1", "stream")
	var got []frame
	drops, blind := 0, 0
	for done := false; !done; {
		// Read a random number of frames on this connection, then drop it.
		for k := rng.IntN(n / 20); k > 0 && !done; k-- {
			m, raw, err := c.read(20 * time.Second)
			if err != nil {
				t.Fatalf("after %d frames, %d drops: %v", len(got), drops, err)
			}
			if seqOf(m) <= last {
				t.Fatalf("frame with seq %v after %d (%d drops): %s", m["seq"], last, drops, raw)
			}
			last = seqOf(m)
			got = append(got, frame{m, raw})
			done = m["type"] == "done"
		}
		if done {
			break
		}
		c.ws.CloseNow()
		drops++
		c = tr.dial()
		c.send(resumeInit("reconnect", id, last))
		if rng.IntN(5) == 0 {
			// Drop again before even reading ready: the runner may be in
			// the middle of its replay.
			c.ws.CloseNow()
			blind++
			c = tr.dial()
			c.send(resumeInit("reconnect", id, last))
		}
		r := c.next()
		if r["type"] != "ready" || r["resumed"] != true || r["session_id"] != id || seqOf(r) < last {
			t.Fatalf("ready on reconnect %d: %v (last seq %d)", drops, r, last)
		}
	}
	t.Logf("%d frames, %d drops (%d before ready)", len(got), drops, blind)
	if drops < 20 {
		t.Errorf("only %d drops", drops)
	}
	checkTextTurn(t, got, "q1", n)
	checkAgainstLog(t, tr, id, 1, got)

	// Live frames go on after the last reconnect.
	c.query("q2", "again")
	var live []frame
	for {
		m, raw, err := c.read(20 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if seqOf(m) <= last {
			t.Fatalf("live frame with seq %v after %d", m["seq"], last)
		}
		last = seqOf(m)
		live = append(live, frame{m, raw})
		if m["type"] == "done" {
			break
		}
	}
	checkTextTurn(t, live, "q2", n)
}

// Frames logged while no host is attached (the turn goes on) are replayed
// on reconnect, followed by live ones.
func TestTurnContinuesWhileDisconnected(t *testing.T) {
	tr := startRunnerWith(t, runnerOpts{scenario: "text", grace: time.Minute,
		env: map[string]string{mockclaude.EnvN: "300", mockclaude.EnvDelayMS: "0"}})
	c := tr.dial()
	ready := c.open("away", nil)
	id := str(ready, "session_id")
	c.query("q1", "go")
	c.ws.CloseNow() // before a single frame of the turn
	// The turn completes while nobody is attached.
	eventually(t, 20*time.Second, "the turn to complete unattended", func() bool {
		evs := tr.logFrames(id, 0)
		var f map[string]any
		_ = json.Unmarshal(evs[len(evs)-1].Payload, &f)
		return f["type"] == "done"
	})
	c = tr.dial()
	c.send(resumeInit("away", id, seqOf(ready)))
	if r := c.next(); r["resumed"] != true {
		t.Fatalf("ready = %v", r)
	}
	var got []frame
	for {
		m, raw, err := c.read(20 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, frame{m, raw})
		if m["type"] == "done" {
			break
		}
	}
	checkTextTurn(t, got, "q1", 300)
	checkAgainstLog(t, tr, id, seqOf(ready), got)
}

// Two connections may follow one session; each gets every frame.
func TestTwoConnectionsOneSession(t *testing.T) {
	tr := startRunnerWith(t, runnerOpts{scenario: "text", grace: time.Minute,
		env: map[string]string{mockclaude.EnvN: "50", mockclaude.EnvDelayMS: "0"}})
	a := tr.dial()
	ready := a.open("pair", nil)
	b := tr.dial()
	b.send(resumeInit("pair", str(ready, "session_id"), seqOf(ready)))
	if r := b.next(); r["resumed"] != true {
		t.Fatalf("ready = %v", r)
	}
	a.query("q1", "hi")
	fa, fb := a.until("done"), b.until("done")
	if len(fa) != len(fb) || len(fa) != 53 {
		t.Fatalf("a got %d frames, b %d", len(fa), len(fb))
	}
	for i := range fa {
		if seqOf(fa[i]) != seqOf(fb[i]) || fa[i]["payload"] != fb[i]["payload"] {
			t.Fatalf("frame %d differs: %v / %v", i, fa[i], fb[i])
		}
	}
	// One leaves; the other still drives the session.
	a.ws.Close(websocket.StatusNormalClosure, "")
	b.turn("q2")
}
