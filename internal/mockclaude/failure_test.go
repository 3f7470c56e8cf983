package mockclaude_test

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/mockclaude"
)

func TestJunkLinesBetweenMessages(t *testing.T) {
	h := start(t, mockclaude.Config{Scenario: "junk", Args: sdkArgs()})
	h.initialize(nil)
	h.user("hi")
	res := h.untilType("result")
	if res["subtype"] != "success" {
		t.Errorf("result = %v", res)
	}
	h.closeAndWait()
	seen := map[string]bool{}
	for _, l := range h.seen {
		seen[string(l)] = true
	}
	for _, want := range []string{"", "null", "42", "[1]", `"s"`, "{}", `{"type":"bogus_future_type","x":1}`, "mock: this line is not JSON"} {
		if !seen[want] {
			t.Errorf("junk line %q not written", want)
		}
	}
	// The real messages are all there, in order, between the junk.
	var kinds []string
	for _, m := range h.messages() {
		if s, _ := m["type"].(string); s == "system" || s == "assistant" || s == "result" {
			kinds = append(kinds, s)
		}
	}
	if strings.Join(kinds, ",") != "system,assistant,result" {
		t.Errorf("real messages = %v", kinds)
	}
}

// countingWriter counts bytes and lines and keeps only lines short enough
// to parse, so reading the huge line costs no memory on this side either.
type countingWriter struct {
	bytes, lines, longest int64
	cur                   int64
	small                 [][]byte
	buf                   []byte
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n := len(p)
	c.bytes += int64(n)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		c.cur += int64(len(part))
		if c.cur <= 4096 {
			c.buf = append(c.buf, part...)
		}
		if i < 0 {
			break
		}
		c.lines++
		c.longest = max(c.longest, c.cur)
		if c.cur <= 4096 {
			c.small = append(c.small, c.buf)
		}
		c.cur, c.buf = 0, nil
		p = p[i+1:]
	}
	return n, nil
}

func TestHugeLineIsStreamed(t *testing.T) {
	const size = 32 << 20
	in := strings.NewReader(`{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize"}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":"hi"}}` + "\n")
	out := &countingWriter{}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code := mockclaude.Run(context.Background(), in, out, nil, mockclaude.Config{Scenario: "huge-line", Size: size, Args: sdkArgs(), Now: newClock().Now})
	runtime.ReadMemStats(&after)
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if out.longest < size || out.longest > size+2048 {
		t.Errorf("longest line %d bytes, want about %d", out.longest, size)
	}
	if out.bytes < size || out.bytes > size+16<<10 {
		t.Errorf("wrote %d bytes, want about %d", out.bytes, size)
	}
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("wrote %d bytes (longest line %d) with %d bytes allocated", out.bytes, out.longest, grew)
	if grew > size/8 {
		t.Errorf("allocated %d bytes while writing a %d-byte line: the line was built in memory", grew, size)
	}
	// Everything but the huge line is small and parses; the last is the result.
	if int64(len(out.small)) != out.lines-1 {
		t.Fatalf("%d small lines of %d", len(out.small), out.lines)
	}
	var last map[string]any
	if err := json.Unmarshal(out.small[len(out.small)-1], &last); err != nil || last["type"] != "result" || last["subtype"] != "success" {
		t.Errorf("last line = %s", out.small[len(out.small)-1])
	}
}

// A smaller huge line, read back whole: it is one valid assistant message.
func TestHugeLineParses(t *testing.T) {
	in := strings.NewReader(`{"type":"user","message":{"role":"user","content":"hi"}}` + "\n")
	var out bytes.Buffer
	if code := mockclaude.Run(context.Background(), in, &out, nil, mockclaude.Config{Scenario: "huge-line", Size: 300000, Args: sdkArgs(), Now: newClock().Now}); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	for _, l := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
		m, ok := object(l)
		if !ok {
			t.Fatalf("line does not parse: %.200s", l)
		}
		if m["type"] == "assistant" && len(blockText(m)) != 300000 {
			t.Errorf("assistant text is %d bytes", len(blockText(m)))
		}
	}
}

func TestCrashMidline(t *testing.T) {
	h := start(t, mockclaude.Config{Scenario: "crash-midline", Args: sdkArgs()})
	h.initialize(nil)
	h.user("hi")
	if code := h.wait(); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	last := h.seen[len(h.seen)-1]
	if _, ok := object(last); ok || !bytes.HasPrefix(last, []byte(`{"type":"assistant"`)) {
		t.Errorf("last output %q: want half a JSON line", last)
	}
	if m, _ := object(h.seen[len(h.seen)-2]); m["subtype"] != "init" {
		t.Errorf("before the half line: %s", h.seen[len(h.seen)-2])
	}
	if !strings.Contains(h.stderr.String(), "mock: simulated crash") {
		t.Errorf("stderr = %q", h.stderr.String())
	}
}

func TestCrashAndExitWithoutResult(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		code     int
	}{{"crash", 3}, {"exit0-noresult", 0}} {
		t.Run(tc.scenario, func(t *testing.T) {
			h := start(t, mockclaude.Config{Scenario: tc.scenario, Args: sdkArgs()})
			h.initialize(nil)
			h.user("hi")
			// Run ends on its own, with stdin still open.
			if code := h.wait(); code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			var kinds []string
			for _, m := range h.messages() {
				kinds = append(kinds, m["type"].(string))
			}
			if strings.Join(kinds, ",") != "control_response,system,assistant" {
				t.Errorf("messages = %v", kinds)
			}
			if !strings.Contains(h.stderr.String(), "mock:") {
				t.Errorf("stderr = %q", h.stderr.String())
			}
		})
	}
}

func TestLingerIgnoresEOF(t *testing.T) {
	h := start(t, mockclaude.Config{Scenario: "linger", Args: sdkArgs()})
	h.initialize(nil)
	h.user("hi")
	h.untilType("result")
	h.stdin.Close()
	h.waitStderr("linger: stdin closed")
	select {
	case code := <-h.code:
		t.Fatalf("Run returned %d after stdin EOF", code)
	default:
	}
	h.cancel()
	if code := h.wait(); code != 143 {
		t.Errorf("exit code %d, want 143", code)
	}
}

func TestCloseStdoutAtEOF(t *testing.T) {
	h := start(t, mockclaude.Config{Scenario: "close-stdout", Args: sdkArgs()})
	h.initialize(nil)
	h.user("hi")
	h.untilType("result")
	h.stdin.Close()
	for {
		if _, ok := h.nextLine(); !ok {
			break // stdout closed
		}
	}
	h.lines = nil
	select {
	case code := <-h.code:
		t.Fatalf("Run returned %d when it should stay alive", code)
	default:
	}
	h.cancel()
	if code := h.wait(); code != 143 {
		t.Errorf("exit code %d, want 143", code)
	}
}

func TestTextNMessagesOfSize(t *testing.T) {
	h := start(t, mockclaude.Config{Scenario: "text", N: 3, Size: 1000, Args: sdkArgs()})
	h.initialize(nil)
	h.user("hi")
	res := h.untilType("result")
	n := 0
	for _, m := range h.messages() {
		if m["type"] == "assistant" {
			n++
			if len(blockText(m)) != 1000 {
				t.Errorf("assistant text is %d bytes", len(blockText(m)))
			}
		}
	}
	if n != 3 || res["num_turns"] != 3.0 {
		t.Errorf("%d assistant messages, result %v", n, res)
	}
	h.closeAndWait()
}
