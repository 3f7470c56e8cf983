package fakegemini

import (
	"errors"
	"testing"
)

// ParseRequest and the reply it leads to never panic: a body is a request
// or an ErrBadRequest.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"text":"SAY hi"}]}]}`))
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"x","response":{"output":"Output: hi\n"}}}]}]}`))
	f.Add([]byte(`{"contents":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseRequest(body)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		rep := decide(req, Options{}.withDefaults())
		if rep.status == 200 && rep.call == nil && len(rep.pieces) == 0 {
			t.Fatalf("an empty reply to %q", body)
		}
	})
}

// The triggers pick their replies.
func TestDecide(t *testing.T) {
	cases := map[string]string{
		`{"contents":[{"role":"user","parts":[{"text":"ctx"},{"text":"please USE_SHELL touch x"}]}]}`:                                 "call run_shell_command",
		`{"contents":[{"role":"user","parts":[{"text":"USE_WRITE a.txt hi"}]}]}`:                                                      "call write_file",
		`{"contents":[{"role":"user","parts":[{"text":"USE_TOOL probe__mark {\"token\":\"t\"}"}]}]}`:                                  "call probe__mark",
		`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"x","response":{"content":[{"text":"t1"}]}}}]}]}`:           `tool said: {"content":[{"text":"t1"}]}`,
		`{"contents":[{"role":"user","parts":[{"text":"SAY exactly this"}]}]}`:                                                        "exactly this",
		`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"x","response":{"output":"<u>\nOutput: hi\nPGID: 1"}}}]}]}`: "tool said: hi",
	}
	for body, want := range cases {
		req, err := ParseRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		rep := decide(req, Options{}.withDefaults())
		got := ""
		if rep.call != nil {
			got = "call " + rep.call.Name
		}
		for _, p := range rep.pieces {
			got += p
		}
		if got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}
