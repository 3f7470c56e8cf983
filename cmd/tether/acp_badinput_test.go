package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// rawACP is tether acp spoken to line by line, as a careless client would.
type rawACP struct {
	t   *testing.T
	in  interface{ Write([]byte) (int, error) }
	out chan map[string]any
}

func startRawACP(t *testing.T, args ...string) *rawACP {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, tetherPath(), append([]string{"acp"}, args...)...)
	cmd.Env = acpEnv()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &rawACP{t: t, in: in, out: make(chan map[string]any, 64)}
	go func() {
		defer close(r.out)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"not_json": sc.Text()}
			}
			r.out <- m
		}
	}()
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("tether acp: %v", err)
		}
	})
	return r
}

func (r *rawACP) send(line string) {
	if _, err := r.in.Write([]byte(line + "\n")); err != nil {
		r.t.Fatal(err)
	}
}

// answer waits for the response of id (a JSON value as sent), passing
// over notifications.
func (r *rawACP) answer(id any) map[string]any {
	r.t.Helper()
	want, _ := json.Marshal(id)
	timeout := time.After(waitLimit)
	for {
		select {
		case m, ok := <-r.out:
			if !ok {
				r.t.Fatalf("stdout ended before the answer to %s", want)
			}
			if _, bad := m["not_json"]; bad {
				r.t.Fatalf("stdout carried a line that is not JSON: %q", m["not_json"])
			}
			got, _ := json.Marshal(m["id"])
			if _, isCall := m["method"]; !isCall && string(got) == string(want) {
				return m
			}
		case <-timeout:
			r.t.Fatalf("no answer to %s", want)
		}
	}
}

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return int(code)
}

func TestACPBadInput(t *testing.T) {
	r := startRawACP(t, "--agent", "mock", "--data-dir", filepath.Join(t.TempDir(), "acp"))
	cwd := filepath.Join(t.TempDir(), "proj")
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	if m := r.answer(1); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	for _, tc := range []struct {
		line string
		id   any
		code int
	}{
		{`{"jsonrpc":"2.0","id":2,"method":"session/new",`, nil, -32700},
		{`[1,2]`, nil, -32600},
		{`{"jsonrpc":"1.0","id":3,"method":"session/new"}`, nil, -32600},
		{`{"jsonrpc":"2.0","id":4,"method":"no/such_method","params":{}}`, 4, -32601},
		{`{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"ses_none","prompt":[{"type":"text","text":"hi"}]}}`, 5, -32602},
		{`{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"mcpServers":[]}}`, 6, -32602},
		{fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":%q,"mcpServers":[{"name":"x","command":"/bin/true","args":[],"env":[]}]}}`, cwd), 7, -32602},
	} {
		r.send(tc.line)
		if m := r.answer(tc.id); errCode(m) != tc.code {
			t.Errorf("%s: answered %v, want error %d", tc.line, m, tc.code)
		}
	}
	// The connection goes on: a session, a turn.
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":8,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, cwd))
	m := r.answer(8)
	res, _ := m["result"].(map[string]any)
	id, _ := res["sessionId"].(string)
	if id == "" {
		t.Fatalf("session/new after bad input: %v", m)
	}
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"hi"}]}}`, id))
	if m := r.answer(9); m["result"] == nil || m["result"].(map[string]any)["stopReason"] != "end_turn" {
		t.Fatalf("a prompt after bad input: %v", m)
	}
}
