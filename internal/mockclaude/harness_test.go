package mockclaude_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/mockclaude"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockclaude.Main())
	}
	goleak.VerifyTestMain(m)
}

// waitLimit bounds every wait so a broken mock fails instead of hanging.
const waitLimit = 20 * time.Second

// sdkArgs is the argv the SDKs pass.
func sdkArgs(extra ...string) []string {
	return append([]string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}, extra...)
}

// fakeClock advances 7ms on every reading.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 22, 4, 18, 11, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(7 * time.Millisecond)
	return c.t
}

// lineSink collects stderr and signals each write.
type lineSink struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	note chan struct{}
}

func (s *lineSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	select {
	case s.note <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *lineSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// harness runs Run in-process over pipes, like an SDK would drive the CLI.
type harness struct {
	t      *testing.T
	stdin  *io.PipeWriter
	lines  chan []byte // stdout lines, without the newline; a final partial line is sent as is
	code   chan int
	stderr *lineSink
	cancel context.CancelFunc
	seen   [][]byte // every line read so far
	exited bool
	exit   int
}

func start(t *testing.T, cfg mockclaude.Config) *harness {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = newClock().Now
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, stdin: inW, lines: make(chan []byte, 8192), code: make(chan int, 1), stderr: &lineSink{note: make(chan struct{}, 1)}, cancel: cancel}
	if cfg.CloseStdout == nil {
		cfg.CloseStdout = outW.Close
	}
	go func() {
		code := mockclaude.Run(ctx, inR, outW, h.stderr, cfg)
		outW.Close()
		h.code <- code
	}()
	go func() {
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				h.lines <- bytes.TrimSuffix(line, []byte("\n"))
			}
			if err != nil {
				close(h.lines)
				return
			}
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		if h.lines != nil {
			for range h.lines {
			}
		}
		if !h.exited {
			<-h.code
		}
		if t.Failed() {
			t.Logf("stderr:\n%s", h.stderr.String())
		}
	})
	return h
}

func (h *harness) send(v any) {
	h.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	h.sendRaw(string(b))
}

func (h *harness) sendRaw(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.stdin, line+"\n"); err != nil {
		h.t.Fatalf("writing stdin: %v", err)
	}
}

func (h *harness) initialize(extra map[string]any) map[string]any {
	h.t.Helper()
	req := map[string]any{"subtype": "initialize", "hooks": nil}
	for k, v := range extra {
		req[k] = v
	}
	h.send(map[string]any{"type": "control_request", "request_id": "req_1_init", "request": req})
	return h.response("req_1_init")
}

func (h *harness) user(text string) {
	h.t.Helper()
	h.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}, "parent_tool_use_id": nil, "session_id": "default"})
}

func (h *harness) control(id string, req map[string]any) map[string]any {
	h.t.Helper()
	h.send(map[string]any{"type": "control_request", "request_id": id, "request": req})
	return h.response(id)
}

func (h *harness) answer(id string, body any) {
	h.t.Helper()
	h.send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": id, "response": body}})
}

// nextLine returns the next stdout line; ok is false at EOF.
func (h *harness) nextLine() ([]byte, bool) {
	h.t.Helper()
	select {
	case l, ok := <-h.lines:
		if ok {
			h.seen = append(h.seen, l)
		}
		return l, ok
	case <-time.After(waitLimit):
		h.t.Fatalf("no stdout line within %v; seen:\n%s", waitLimit, h.dump())
		return nil, false
	}
}

// next returns the next stdout line that is a JSON object.
func (h *harness) next() map[string]any {
	h.t.Helper()
	for {
		l, ok := h.nextLine()
		if !ok {
			h.t.Fatalf("stdout ended; seen:\n%s", h.dump())
		}
		if m, ok := object(l); ok {
			return m
		}
	}
}

// until reads until match returns true and returns the matching message.
func (h *harness) until(match func(map[string]any) bool) map[string]any {
	h.t.Helper()
	for {
		if m := h.next(); match(m) {
			return m
		}
	}
}

func (h *harness) untilType(typ string) map[string]any {
	h.t.Helper()
	return h.until(func(m map[string]any) bool { return m["type"] == typ })
}

// response waits for the control_response to request id and returns its
// response body (subtype, request_id, response/error).
func (h *harness) response(id string) map[string]any {
	h.t.Helper()
	m := h.until(func(m map[string]any) bool {
		return m["type"] == "control_response" && get(m, "response", "request_id") == id
	})
	return m["response"].(map[string]any)
}

// closeAndWait closes stdin and returns Run's exit code.
func (h *harness) closeAndWait() int {
	h.t.Helper()
	h.stdin.Close()
	return h.wait()
}

func (h *harness) wait() int {
	h.t.Helper()
	if h.exited {
		return h.exit
	}
	for {
		select {
		case l, ok := <-h.lines:
			if ok {
				h.seen = append(h.seen, l)
				continue
			}
			h.lines = nil
		case code := <-h.code:
			h.exited, h.exit = true, code
			if h.lines != nil {
				for l := range h.lines {
					h.seen = append(h.seen, l)
				}
				h.lines = nil
			}
			return code
		case <-time.After(waitLimit):
			h.t.Fatalf("Run did not return within %v; seen:\n%s", waitLimit, h.dump())
		}
	}
}

// waitStderr waits until stderr contains s.
func (h *harness) waitStderr(s string) {
	h.t.Helper()
	deadline := time.After(waitLimit)
	for !strings.Contains(h.stderr.String(), s) {
		select {
		case <-h.stderr.note:
		case <-deadline:
			h.t.Fatalf("stderr never said %q; got:\n%s", s, h.stderr.String())
		}
	}
}

// messages parses every line seen so far; non-objects are skipped.
func (h *harness) messages() []map[string]any {
	var out []map[string]any
	for _, l := range h.seen {
		if m, ok := object(l); ok {
			out = append(out, m)
		}
	}
	return out
}

func (h *harness) dump() string {
	var b strings.Builder
	for _, l := range h.seen {
		if len(l) > 300 {
			l = append(l[:300:300], "..."...)
		}
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// checkAllTyped fails unless every line seen is a JSON object with a type.
func (h *harness) checkAllTyped() {
	h.t.Helper()
	for _, l := range h.seen {
		m, ok := object(l)
		if !ok {
			h.t.Errorf("stdout line is not a JSON object: %.200s", l)
			continue
		}
		if s, _ := m["type"].(string); s == "" {
			h.t.Errorf("stdout line has no type: %.200s", l)
		}
	}
}

func object(l []byte) (map[string]any, bool) {
	var m map[string]any
	if err := json.Unmarshal(l, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// get walks nested objects by key.
func get(m any, path ...string) any {
	for _, k := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[k]
	}
	return m
}

// blockText returns the text of the first content block of a message.
func blockText(m map[string]any) string {
	content, _ := get(m, "message", "content").([]any)
	if len(content) == 0 {
		return ""
	}
	s, _ := get(content[0], "text").(string)
	return s
}

func isType(typ, subtype string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		return m["type"] == typ && (subtype == "" || m["subtype"] == subtype)
	}
}
