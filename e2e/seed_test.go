package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// seedClient knows only the seed's frame tables: JSON objects with a type,
// sent and received over a WebSocket. It imports nothing of tether.
type seedClient struct {
	t  *testing.T
	ws *websocket.Conn
	hc *http.Client
}

// noKeepAlive is an HTTP client whose connections do not outlive a test.
func noKeepAlive() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

func dialSeed(t *testing.T, tr *testRunner, token string) (*seedClient, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	hc := noKeepAlive()
	ws, resp, err := websocket.Dial(ctx, tr.URL, &websocket.DialOptions{HTTPHeader: h, HTTPClient: hc})
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(64 << 20)
	c := &seedClient{t: t, ws: ws, hc: hc}
	t.Cleanup(func() { ws.CloseNow() })
	return c, resp, nil
}

func (c *seedClient) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *seedClient) next() map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, data, err := c.ws.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("frame %s: %v", data, err)
	}
	return m
}

// until reads frames up to the first of type typ (an error frame fails).
func (c *seedClient) until(typ string) []map[string]any {
	c.t.Helper()
	var got []map[string]any
	for {
		f := c.next()
		got = append(got, f)
		if f["type"] == typ {
			return got
		}
		if f["type"] == "error" {
			c.t.Fatalf("error frame while waiting for %s: %v", typ, f)
		}
	}
}

// stop ends the session and waits for the runner to close the connection.
func (c *seedClient) stop() {
	c.t.Helper()
	c.send(map[string]any{"type": "stop"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if _, _, err := c.ws.Read(ctx); err != nil {
			if s := websocket.CloseStatus(err); s != websocket.StatusNormalClosure {
				c.t.Fatalf("after stop: %v (close status %v)", err, s)
			}
			return
		}
	}
}

// payloads decodes the CLI lines carried by message frames.
func payloads(t *testing.T, frames []map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, f := range frames {
		if f["type"] != "message" {
			continue
		}
		p, ok := f["payload"].(string)
		if !ok {
			t.Fatalf("message payload is not a string: %v", f)
		}
		var line map[string]any
		if err := json.Unmarshal([]byte(p), &line); err != nil {
			t.Fatalf("payload is not a CLI JSON line: %q", p)
		}
		out = append(out, line)
	}
	return out
}

// seedSession opens a default-mode (non-relay) session: the runner speaks
// the CLI's control protocol itself.
func seedSession(t *testing.T, tr *testRunner, workspaceID string, opts map[string]any) (*seedClient, string) {
	t.Helper()
	c, _, err := dialSeed(t, tr, tr.Token)
	if err != nil {
		t.Fatal(err)
	}
	c.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": workspaceID, "session_opts": opts})
	ready := c.next()
	id, _ := ready["session_id"].(string)
	if ready["type"] != "ready" || id == "" {
		t.Fatalf("ready = %v", ready)
	}
	return c, id
}

// turn runs one query and returns the result line and every CLI line.
func (c *seedClient) turn(requestID, prompt string) (result map[string]any, lines []map[string]any) {
	c.t.Helper()
	c.send(map[string]any{"type": "query", "request_id": requestID, "prompt": prompt, "opts": map[string]any{}})
	frames := c.until("done")
	if done := frames[len(frames)-1]; done["request_id"] != requestID {
		c.t.Fatalf("done = %v", done)
	}
	lines = payloads(c.t, frames)
	for _, l := range lines {
		if l["type"] == "result" {
			result = l
		}
	}
	if result == nil {
		c.t.Fatalf("no result line in %v", lines)
	}
	return result, lines
}

// The seed's lifecycle against the real CLI: a client that knows only the
// frame tables does init → ready → query → message frames (the CLI's raw
// lines) → done → stop; the runner performs initialize itself.
func TestRealCLISeedClient(t *testing.T) {
	timed(t)
	tr := startRunner(t, true)

	t.Run("Unauthorized", func(t *testing.T) {
		for _, tok := range []string{"", "wrong-token-wrong-token"} {
			if _, resp, err := dialSeed(t, tr, tok); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("token %q: err %v, resp %v", tok, err, resp)
			}
		}
	})

	t.Run("Lifecycle", func(t *testing.T) {
		timed(t)
		c, sessionID := seedSession(t, tr, newWorkspaceID("seed"), map[string]any{"model": "claude-sonnet-4-5"})
		c.send(map[string]any{"type": "query", "request_id": "q1", "prompt": "SAY hi", "opts": map[string]any{}})
		frames := c.until("done")
		var types []string
		var result map[string]any
		prev := 1.0 // ready's; events that make no frame leave gaps
		for i, f := range frames {
			seq, _ := f["seq"].(float64)
			if seq <= prev {
				t.Fatalf("frame %d has seq %v after %v: %v", i, f["seq"], prev, f)
			}
			prev = seq
			if f["type"] == "message" && f["request_id"] != "q1" {
				t.Fatalf("message for %v", f["request_id"])
			}
		}
		for _, l := range payloads(t, frames) {
			typ, _ := l["type"].(string)
			types = append(types, typ)
			if typ == "control_request" || typ == "control_response" {
				t.Fatalf("the runner's own control traffic reached the host: %v", l)
			}
			if typ == "system" && l["subtype"] == "init" && l["session_id"] != sessionID {
				t.Fatalf("CLI session %v, runner session %s", l["session_id"], sessionID)
			}
			if typ == "result" {
				result = l
			}
		}
		done := frames[len(frames)-1]
		if result == nil || result["result"] != "hi" || done["reason"] != "completed" {
			t.Fatalf("done = %v, result = %v, lines %v", done, result, types)
		}
		if types[0] != "system" {
			t.Fatalf("first CLI line is %s", types[0])
		}

		// A control request the runner answers through the CLI.
		c.send(map[string]any{"type": "control", "request_id": "c1", "subtype": "mcp_status", "params": map[string]any{}})
		resp := c.until("control_response")
		if last := resp[len(resp)-1]; last["request_id"] != "c1" || last["response"] == nil {
			t.Fatalf("control_response = %v", last)
		}
		c.stop()
	})

	t.Run("RelayRefusesControlFrames", func(t *testing.T) {
		// In relay mode the host speaks the control protocol in input
		// frames; a control frame is refused with an error, not hung.
		c, _, err := dialSeed(t, tr, tr.Token)
		if err != nil {
			t.Fatal(err)
		}
		c.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": newWorkspaceID("seed"), "host_control": true})
		if r := c.next(); r["type"] != "ready" {
			t.Fatalf("ready = %v", r)
		}
		c.send(map[string]any{"type": "control", "request_id": "c1", "subtype": "mcp_status"})
		for {
			f := c.next()
			if f["type"] == "error" {
				if f["request_id"] != "c1" || !strings.Contains(f["details"].(string), "relay") {
					t.Fatalf("error = %v", f)
				}
				break
			}
		}
		c.stop()
	})
}
