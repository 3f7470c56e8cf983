package fakeopenai

import (
	"encoding/json"
	"testing"
)

// FuzzDecide feeds any bytes to both request parsers and the scenario
// picker: bad input must give an error or a reply, never a panic, and every
// reply must encode.
func FuzzDecide(f *testing.F) {
	for _, name := range []string{"codex-exec-shell-tool.requests.jsonl", "opencode-run-shell-then-resume.requests.jsonl"} {
		for _, r := range readCapture(f, name) {
			f.Add(shrink(f, r.Body))
		}
	}
	for _, s := range []string{
		`{"input":"SAY hi"}`, `{"input":null}`, `{"input":[{"type":"function_call_output","output":[{"text":"x"}]}]}`,
		`{"messages":[{"role":"user","content":"\"USE_SHELL ls\""}]}`, `{"messages":[{"role":"tool","content":null}]}`,
		`{"messages":[{"role":"user","content":"ERROR_4"}]}`, `{"input":"ERROR_59"}`, `{"input":"\"\\ud800\""}`,
	} {
		f.Add([]byte(s))
	}
	opts := Options{}.withDefaults()
	f.Fuzz(func(t *testing.T, body []byte) {
		var rr responsesRequest
		if json.Unmarshal(body, &rr) == nil {
			check(t, rr.turn(), opts)
		}
		var cr chatRequest
		if json.Unmarshal(body, &cr) == nil {
			check(t, cr.turn(), opts)
		}
	})
}

func check(t *testing.T, tn turn, opts Options) {
	rep := decide(tn, opts)
	if rep.status != 200 && (rep.status < 400 || rep.status > 599) {
		t.Fatalf("status %d", rep.status)
	}
	if rep.command != "" {
		for _, c := range []toolCall{codexShellCall(tn.tools, rep.command), chatShellCall(tn.tools, rep.command)} {
			if !json.Valid(c.args) {
				t.Fatalf("arguments %q are not JSON", c.args)
			}
		}
	}
	if _, err := json.Marshal(outputText{Text: rep.text}); err != nil {
		t.Fatalf("encode %q: %v", rep.text, err)
	}
}

// shrink keeps a captured body's shape but cuts every string to 40 bytes:
// seeds of 40 KB make the coverage-guided fuzzer crawl.
func shrink(f *testing.F, body json.RawMessage) []byte {
	f.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		f.Fatal(err)
	}
	var cut func(any) any
	cut = func(v any) any {
		switch x := v.(type) {
		case string:
			return x[:min(len(x), 40)]
		case []any:
			for i := range x {
				x[i] = cut(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = cut(x[k])
			}
		}
		return v
	}
	b, err := json.Marshal(cut(v))
	if err != nil {
		f.Fatal(err)
	}
	return b
}
