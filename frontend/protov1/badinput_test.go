package protov1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// expectError reads the next frame and checks it is an error with code.
func (c *seedClient) expectError(code string) map[string]any {
	c.t.Helper()
	f := c.next()
	if f["type"] != "error" || f["code"] != code {
		c.t.Fatalf("wanted an error %s, got %v", code, f)
	}
	if str(f, "details") == "" {
		c.t.Errorf("error %s has no details", code)
	}
	return f
}

// turn runs a query to its done frame and checks the turn completed.
func (c *seedClient) turn(requestID string) []map[string]any {
	c.t.Helper()
	c.query(requestID, "hello")
	for {
		frames := c.until("done")
		done := frames[len(frames)-1]
		if done["request_id"] != requestID {
			continue // a done of an earlier request
		}
		if done["reason"] != "completed" {
			c.t.Fatalf("done = %v", done)
		}
		return frames
	}
}

// Bad frames before init get an error frame each (not logged: no seq), and
// the connection still opens a session afterwards.
func TestBadFramesBeforeInit(t *testing.T) {
	tr := startRunner(t, "text", time.Minute)
	c := tr.dial()

	c.sendRaw(`{"type":"init",`)
	if f := c.expectError("invalid_frame"); seqOf(f) != 0 {
		t.Errorf("an error before init has seq %v", f["seq"])
	}
	c.sendRaw(`[1,2,3]`)
	c.expectError("invalid_frame")
	c.sendRaw(`{"no_type":1}`)
	c.expectError("invalid_frame")
	c.sendRaw(`{"type":"teleport"}`)
	c.expectError("unknown_type")
	c.sendRaw(`{"type":42}`)
	c.expectError("invalid_frame")
	c.sendRaw(`{"type":"query","request_id":"q0","prompt":"hi"}`)
	if f := c.expectError("not_initialized"); f["request_id"] != "q0" {
		t.Errorf("not_initialized for %v", f["request_id"])
	}
	c.sendRaw(`{"type":"stop"}`)
	c.expectError("not_initialized")
	c.sendRaw(`{"type":"init","protocol_version":1,"workspace_id":"w","pad":"` + strings.Repeat("x", 1<<20) + `"}`)
	c.expectError("frame_too_large")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := c.ws.Write(ctx, websocket.MessageBinary, []byte(`{"type":"init","protocol_version":1,"workspace_id":"w"}`)); err != nil {
		t.Fatal(err)
	}
	cancel()
	c.expectError("invalid_frame")

	ready := c.open("w1", nil)
	if seqOf(ready) != 1 {
		t.Fatalf("ready = %v", ready)
	}
	c.turn("q1")
}

func TestUnsupportedProtocolVersion(t *testing.T) {
	tr := startRunner(t, "text", time.Minute)
	for _, v := range []string{`2`, `0`, `"1"`, `-1`} {
		t.Run(v, func(t *testing.T) {
			c := tr.dial()
			c.sendRaw(`{"type":"init","protocol_version":` + v + `,"workspace_id":"w"}`)
			if v == `"1"` {
				// A string does not decode as a number: the frame is bad,
				// not of another version; the connection stays.
				c.expectError("invalid_frame")
				return
			}
			f := c.expectError("unsupported_protocol_version")
			if !strings.Contains(str(f, "details"), "1") {
				t.Errorf("details do not say which version: %v", f)
			}
			frames, st := c.expectClosed()
			if len(frames) != 0 || st != websocket.StatusPolicyViolation {
				t.Fatalf("after unsupported version: frames %v, close %v", frames, st)
			}
		})
	}
	if n := len(tr.liveSessions()); n != 0 {
		t.Fatalf("%d sessions after refused inits", n)
	}
}

// Bad frames inside a session are answered with an error frame on their
// connection (without seq: it is no event of the session's) and the
// session goes on.
func TestBadFramesInSession(t *testing.T) {
	tr := startRunner(t, "text", time.Minute)
	c := tr.dial()
	c.open("w1", nil)
	c.turn("q1")

	check := func(code, requestID string) {
		t.Helper()
		f := c.expectError(code)
		if _, numbered := f["seq"]; numbered {
			t.Fatalf("error %s has seq %v", code, f["seq"])
		}
		if f["request_id"] != requestID {
			t.Errorf("error %s for request %v, want %q", code, f["request_id"], requestID)
		}
	}
	c.sendRaw(`not json at all`)
	check("invalid_frame", "")
	c.sendRaw(`{"type":"wormhole","x":1}`)
	check("unknown_type", "")
	c.sendRaw(`{"type":"query","request_id":"q2","prompt":"` + strings.Repeat("y", 1<<20) + `"}`)
	check("frame_too_large", "")
	c.sendRaw(`{"type":"init","protocol_version":1,"workspace_id":"w2"}`)
	check("already_initialized", "")
	c.sendRaw(`{"type":"query","prompt":"no id"}`)
	check("invalid_frame", "")
	c.sendRaw(`{"type":"query","request_id":"q3","prompt":""}`)
	check("invalid_frame", "")
	c.sendRaw(`{"type":"ready","session_id":"forged"}`)
	check("invalid_frame", "")
	c.sendRaw(`{"type":"input","line":"{\"type\":\"user\"}"}`)
	check("invalid_frame", "") // input needs a relay (host_control) session
	c.sendRaw(`{"type":"control","request_id":"c1","subtype":"no_such_subtype"}`)
	check("control_failed", "c1")

	// The session still works, on this connection and on a new one.
	c.turn("q4")
	c2 := tr.dial()
	c2.open("w2", nil)
	c2.turn("q5")
}

// Refused inits: one clear error frame, then the connection closes.
func TestRefusedInits(t *testing.T) {
	tr := startRunner(t, "text", time.Minute)
	refuse := func(t *testing.T, init string, code string) {
		t.Helper()
		c := tr.dial()
		c.t = t
		c.sendRaw(init)
		frames, st := c.expectClosed()
		if len(frames) != 1 || frames[0]["type"] != "error" || frames[0]["code"] != code || str(frames[0], "details") == "" {
			t.Fatalf("init %s: frames %v, want one error %s", init, frames, code)
		}
		if st != websocket.StatusPolicyViolation {
			t.Fatalf("init %s: closed with %v", init, st)
		}
	}
	for _, id := range []string{"../x", "a/b", "..", "\u0000", "", ".", ".git", "-rf", "a\\b", "x\ny", "é", strings.Repeat("a", 129), "/etc"} {
		t.Run("workspace "+fmt.Sprintf("%q", id), func(t *testing.T) {
			init, _ := json.Marshal(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": id})
			refuse(t, string(init), "invalid_workspace_id")
		})
	}
	for _, opts := range []string{
		`{"cli_path":"/bin/sh"}`, `{"env":{"ANTHROPIC_API_KEY":"x"}}`, `{"cwd":"/"}`, `{"settings":"{}"}`,
		`{"unknown_key":1}`, `{"extra_args":["--dangerously-skip-permissions"]}`, `{"add_dirs":["../.."]}`,
		`{"add_dirs":["/etc"]}`, `{"model":"--settings=/etc/passwd"}`, `{"permission_mode":"yolo"}`,
		`{"max_turns":-1}`, `{"model":7}`, `{"tool_network":true,"model":"x","zzz":0}`,
		`{"cwd":"../w"}`, `{"cwd":"no-such-dir"}`,
	} {
		t.Run("opts "+opts, func(t *testing.T) {
			refuse(t, `{"type":"init","protocol_version":1,"workspace_id":"w","session_opts":`+opts+`}`, "invalid_session_opts")
		})
	}
	// session_opts that are not an object fail to decode as an init: the
	// frame is refused, the connection waits for a good one.
	for _, opts := range []string{`[1]`, `"sonnet"`, `3`} {
		t.Run("opts "+opts, func(t *testing.T) {
			c := tr.dial()
			c.t = t
			c.sendRaw(`{"type":"init","protocol_version":1,"workspace_id":"w","session_opts":` + opts + `}`)
			c.expectError("invalid_session_opts")
			c.send(map[string]any{"type": "stop"})
			c.expectError("not_initialized")
		})
	}
	t.Run("resume unknown", func(t *testing.T) {
		refuse(t, `{"type":"init","protocol_version":1,"workspace_id":"w","resume":"no-such-session"}`, "session_not_found")
	})
	if n := len(tr.liveSessions()); n != 0 {
		t.Fatalf("%d sessions after refused inits", n)
	}
	if procs := mockProcs(); len(procs) != 0 {
		t.Fatalf("refused inits left agents running: %v", procs)
	}
	// The workspace named in the refused inits is free.
	c := tr.dial()
	c.open("w", nil)
	c.turn("q1")
}

func TestWorkspaceBusy(t *testing.T) {
	tr := startRunner(t, "text", time.Minute)
	first := tr.dial()
	ready := first.open("shared", nil)

	second := tr.dial()
	second.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "shared"})
	frames, st := second.expectClosed()
	if len(frames) != 1 || frames[0]["code"] != "workspace_busy" || st != websocket.StatusPolicyViolation {
		t.Fatalf("second session on a busy workspace: frames %v, close %v", frames, st)
	}
	// Resuming the live session with another workspace id is refused too.
	third := tr.dial()
	third.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "other", "resume": ready["session_id"]})
	frames, _ = third.expectClosed()
	if len(frames) != 1 || frames[0]["code"] != "session_not_found" {
		t.Fatalf("resume into another workspace: %v", frames)
	}
	// The first session is untouched.
	first.turn("q1")
	if live := tr.liveSessions(); len(live) != 1 || live[0] != ready["session_id"] {
		t.Fatalf("sessions = %v", live)
	}
}

// Random garbage from a client never takes the session down.
func TestGarbageFrames(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	tr := startRunner(t, "text", time.Minute)
	c := tr.dial()
	ready := c.open("garbage", nil)

	// Read everything the runner answers while the garbage goes in, up to
	// the answer to a sentinel sent last (frames are handled in order).
	const sentinel = "sentinel-after-the-garbage"
	reading := make(chan error, 1)
	go func() {
		for {
			_, data, err := c.ws.Read(context.Background())
			if err != nil {
				reading <- err
				return
			}
			var f map[string]any
			if err := json.Unmarshal(data, &f); err != nil {
				reading <- fmt.Errorf("runner sent %q: %v", data, err)
				return
			}
			if f["code"] == "unknown_type" && strings.Contains(str(f, "details"), sentinel) {
				reading <- nil
				return
			}
		}
	}()
	for i := range 400 {
		typ, data := garbage(rng)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.ws.Write(ctx, typ, data)
		cancel()
		if err != nil {
			t.Fatalf("garbage frame %d (%q) broke the connection: %v", i, data, err)
		}
	}
	c.sendRaw(`{"type":"` + sentinel + `"}`)
	select {
	case err := <-reading:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer to the sentinel")
	}

	// Everything the session logged is well-formed and numbered in order.
	var prev uint64
	for _, ev := range tr.logFrames(str(ready, "session_id"), 0) {
		var f map[string]any
		if err := json.Unmarshal(ev.Payload, &f); err != nil {
			t.Fatalf("logged frame %d is not JSON: %q", ev.Seq, ev.Payload)
		}
		if ev.Seq <= prev {
			t.Fatalf("log seq %d after %d", ev.Seq, prev)
		}
		prev = ev.Seq
	}

	// A fresh connection resumes the session, which still runs turns.
	c.ws.CloseNow()
	c2 := tr.dial()
	c2.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "garbage", "resume": ready["session_id"], "last_seq": prev})
	if r := c2.next(); r["type"] != "ready" || r["resumed"] != true {
		t.Fatalf("resume after garbage: %v", r)
	}
	c2.turn("after-garbage")
}

// garbage makes one frame a confused or hostile client could send; never
// a stop or a valid query (those would change the session on purpose).
func garbage(rng *rand.Rand) (websocket.MessageType, []byte) {
	switch rng.IntN(6) {
	case 0: // random bytes
		b := make([]byte, rng.IntN(300))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return websocket.MessageText, b
	case 1: // random bytes as a binary frame
		b := make([]byte, 1+rng.IntN(100))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return websocket.MessageBinary, b
	case 2: // any JSON value
		b, _ := json.Marshal(randomValue(rng, 3))
		return websocket.MessageText, b
	case 3: // truncated valid frame
		frame := `{"type":"query","request_id":"q","prompt":[{"type":"text","text":"hi"}]}`
		return websocket.MessageText, []byte(frame[:rng.IntN(len(frame))])
	default: // a typed object with fields of the wrong kinds
		types := []string{"init", "query", "control", "interrupt", "input", "ready", "message", "done", "error", "control_response", "", "QUERY", "stop ", "\u0000"}
		fields := []string{"request_id", "prompt", "subtype", "params", "line", "protocol_version", "workspace_id", "resume", "last_seq", "session_opts", "seq", "payload", "__proto__"}
		m := map[string]any{"type": types[rng.IntN(len(types))]}
		for range rng.IntN(5) {
			m[fields[rng.IntN(len(fields))]] = randomValue(rng, 2)
		}
		if m["type"] == "query" {
			m["prompt"] = rng.IntN(100) // never a valid prompt
		}
		if m["type"] == "input" {
			m["line"] = fmt.Sprint(randomValue(rng, 1)) + "\n" // never one line
		}
		b, _ := json.Marshal(m)
		return websocket.MessageText, b
	}
}

func randomValue(rng *rand.Rand, depth int) any {
	k := rng.IntN(7)
	if depth == 0 {
		k %= 4
	}
	switch k {
	case 0:
		return nil
	case 1:
		return rng.Float64()*2e9 - 1e9
	case 2:
		b := make([]rune, rng.IntN(20))
		for i := range b {
			b[i] = rune(rng.IntN(0x3000))
		}
		return string(b)
	case 3:
		return rng.IntN(2) == 0
	case 4, 5:
		var a []any
		for range rng.IntN(4) {
			a = append(a, randomValue(rng, depth-1))
		}
		return a
	default:
		m := map[string]any{}
		for range rng.IntN(4) {
			m[fmt.Sprint(rng.IntN(1000))] = randomValue(rng, depth-1)
		}
		return m
	}
}
