package shim_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/testing/shimclient"
	"github.com/tetherhq/tether/runner/sessions"
)

// counter reads WS /events keeping nothing but counts, so a test's heap
// is the shim's.
type counter struct {
	t                 *testing.T
	ws                *websocket.Conn
	seen, completions int
}

func newCounter(t *testing.T, h *harness) *counter {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.Base, "http")+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	return &counter{t: t, ws: ws}
}

func (c *counter) untilCompletions(n int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for c.completions < n {
		_, data, err := c.ws.Read(ctx)
		if err != nil {
			c.t.Fatalf("after %d events: %v", c.seen, err)
		}
		var env struct {
			Event struct {
				Type string `json:"type"`
			} `json:"event"`
		}
		if err := json.Unmarshal(data, &env); err != nil {
			c.t.Fatal(err)
		}
		c.seen++
		if env.Event.Type == "completion" {
			c.completions++
		}
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// The shim keeps no event of a run in memory: its stream is read from
// the log. 40,000 events more leave its heap where it was (the core
// keeps a bounded number of the newest in memory, reached in the first
// 20,000); a copy of each would be megabytes.
func TestShimKeepsNoEventHistory(t *testing.T) {
	const n = 20_000
	h := start(t, &shimclient.FloodDriver{N: n}, nil)
	events := newCounter(t, h)
	h.Must(200, "POST", "/spawn", brief("flood"), nil)
	events.untilCompletions(1)
	before := heapInUse()
	for i := range 2 {
		var accepted map[string]string
		h.Must(200, "POST", "/inject-context", map[string]any{"content": "more", "priority": "required"}, &accepted)
		// Sent at once, or, when it came while the completion was going
		// out, queued and sent once it is: a turn either way.
		if d := accepted["delivery"]; d != "new_turn" && d != "queued" {
			t.Fatalf("the update was %v, not a turn", accepted)
		}
		events.untilCompletions(i + 2)
	}
	if events.seen < 3*n {
		t.Fatalf("%d events read, want %d and more", events.seen, 3*n)
	}
	after := heapInUse()
	grown := int64(after) - int64(before)
	t.Logf("heap in use %d KiB after %d events, %d KiB after %d", before>>10, n, after>>10, 3*n)
	if grown > 3<<20 {
		t.Errorf("the heap grew by %d KiB over %d events: the shim keeps them", grown>>10, 2*n)
	}
}

// A shim started again on the same data serves the runs of the one
// before from the log: a client resuming after a sequence gets exactly
// the rest (the same ids and sequences), the shim's own events included,
// and then the new process's runs.
func TestResumeAfterAShimRestart(t *testing.T) {
	dir := t.TempDir()
	a := startIn(t, dir, newMock(), nil)
	ea := a.Events("")
	a.Must(200, "POST", "/spawn", brief("before the restart"), nil)
	run := ea.Until("completion", wait)
	a.Must(200, "POST", "/kill", map[string]any{}, nil)
	run = append(run, ea.Until("lifecycle", wait)...)
	if last := run[len(run)-1]; last.Str("action") != "killed" {
		t.Fatalf("the run ends with %+v", last.Event)
	}
	ea.Close()
	a.Stop()

	b := startIn(t, dir, newMock(), nil)
	cut := run[4]
	rest := b.Events(fmt.Sprintf("runId=%s&after=%d", cut.RunID, cut.SourceSequence))
	var got []shimclient.Envelope
	for range len(run) - 5 {
		got = append(got, rest.Next(wait))
	}
	if !slices.EqualFunc(got, run[5:], sameEnvelope) {
		t.Fatalf("resumed after %d in the new process:\n%v\nthe first process sent\n%v", cut.SourceSequence, got, run[5:])
	}
	// Past the run's end the request is refused as before the restart.
	var reply map[string]any
	if code := b.Call("GET", fmt.Sprintf("/events?runId=%s&after=%d", cut.RunID, len(run)+1), nil, &reply); code != http.StatusBadRequest {
		t.Errorf("after the run's last event: %d %v", code, reply)
	}
	// The new process's runs come after.
	b.Must(200, "POST", "/spawn", brief("after the restart"), nil)
	next := rest.Until("completion", wait)
	if next[0].RunID == cut.RunID || next[0].SourceSequence != 1 || next[0].Str("action") != "started" {
		t.Errorf("the next run starts with %+v", next[0])
	}
}

func sameEnvelope(a, b shimclient.Envelope) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// A client resuming in the middle of a long run gets exactly the rest:
// the same events, sequences and ids, tool calls and the artifacts the
// run's completions list included, wherever it resumes (the shim starts
// it at the run's last checkpoint before its place, not at the start).
func TestResumeMidRun(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("Write the notes"), nil)
	run := events.Until("completion", wait)
	for len(run) < 2600 { // turns of tool calls and file changes, past two checkpoints
		var accepted map[string]string
		h.Must(200, "POST", "/inject-context", map[string]any{"content": "Write the notes again", "priority": "required"}, &accepted)
		if accepted["delivery"] != "new_turn" {
			t.Fatalf("the update was %v, not a turn", accepted)
		}
		run = append(run, events.Until("completion", wait)...)
	}
	last := run[len(run)-1]
	if n := len(last.Event["artifactsProduced"].([]any)); n < 2 {
		t.Fatalf("the run's completion lists %d artifacts: the test proves little", n)
	}
	for _, after := range []int{1, 1000, 1500, 2222, len(run) - 2, len(run)} {
		rest := h.Events(fmt.Sprintf("runId=%s&after=%d", last.RunID, after))
		var got []shimclient.Envelope
		if after < len(run) {
			got = rest.Until("completion", wait)
			for got[len(got)-1].SourceSequence < last.SourceSequence {
				got = append(got, rest.Until("completion", wait)...)
			}
		}
		if !slices.EqualFunc(got, run[after:], sameEnvelope) {
			t.Fatalf("after %d: %d events, want %d:\n%v\nwant\n%v", after, len(got), len(run)-after, got, run[after:])
		}
		rest.Close()
	}
}

// Runs' records that cannot be read stop the shim with ErrRecords naming
// the file, never a panic or a shim that forgot them silently.
func TestDamagedRunRecords(t *testing.T) {
	file := filepath.Join(t.TempDir(), "shim-runs.json")
	for _, data := range []string{"", "{", `{"id":"r"}`, "[1,2]", "\x00\xff"} {
		if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := shim.New(shim.Config{Sessions: (*sessions.Manager)(nil), Agent: "mock", WorkspaceID: "w", StateFile: file})
		if !errors.Is(err, shim.ErrRecords) || !strings.Contains(err.Error(), file) {
			t.Errorf("records %q: %v", data, err)
		}
	}
}
