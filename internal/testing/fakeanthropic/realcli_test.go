package fakeanthropic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/testenv"
)

// cliLine is one stream-json line the CLI prints; only the fields the
// tests assert on.
type cliLine struct {
	Type           string `json:"type"`
	Subtype        string `json:"subtype"`
	IsError        bool   `json:"is_error"`
	Result         string `json:"result"`
	APIErrorStatus int    `json:"api_error_status"`
	Message        struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

// runClaude runs the real CLI in print mode against srv and returns what it
// printed. A non-zero exit is not an error here: API errors exit 1 by design.
func runClaude(t *testing.T, srv *Server, prompt string, extra ...string) []cliLine {
	t.Helper()
	bin := testenv.RequireClaudeCLI(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	args := append([]string{"-p", prompt, "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-5"}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = testenv.ClaudeEnv(t.TempDir(), srv.URL())
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("claude %q: %v in %v; %d requests to the fake", prompt, err, time.Since(start).Round(time.Millisecond), len(srv.Requests()))
	if ctx.Err() != nil {
		t.Fatalf("claude timed out; stderr:\n%s", stderr.String())
	}
	var lines []cliLine
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l cliLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("stdout line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		t.Fatalf("no output (err %v); stderr:\n%s", err, stderr.String())
	}
	return lines
}

func resultLine(t *testing.T, lines []cliLine) cliLine {
	t.Helper()
	last := lines[len(lines)-1]
	if last.Type != "result" {
		t.Fatalf("last line is %q, want result: %+v", last.Type, last)
	}
	return last
}

// checkBetaRequest asserts the CLI reached the fake with its usual
// "POST /v1/messages?beta=true".
func checkBetaRequest(t *testing.T, srv *Server) {
	t.Helper()
	for _, r := range srv.Requests() {
		if r.Method == "POST" && r.Path == "/v1/messages" && r.Query.Get("beta") == "true" {
			return
		}
	}
	t.Errorf("no POST /v1/messages?beta=true among %d requests", len(srv.Requests()))
}

func TestRealCLISay(t *testing.T) {
	testenv.RequireClaudeCLI(t)
	srv, _ := startServer(t, Options{})
	res := resultLine(t, runClaude(t, srv, "SAY hi there"))
	if res.Subtype != "success" || res.IsError || res.Result != "hi there" {
		t.Errorf("result %+v", res)
	}
	checkBetaRequest(t, srv)
}

func TestRealCLIError400(t *testing.T) {
	testenv.RequireClaudeCLI(t)
	srv, _ := startServer(t, Options{})
	res := resultLine(t, runClaude(t, srv, "ERROR_400"))
	if !res.IsError || res.APIErrorStatus != 400 {
		t.Errorf("result %+v", res)
	}
	checkBetaRequest(t, srv)
}

func TestRealCLIBashTool(t *testing.T) {
	testenv.RequireClaudeCLI(t)
	srv, _ := startServer(t, Options{})
	lines := runClaude(t, srv, "please USE_BASH", "--allowedTools", "Bash")
	if !hasToolResult(lines, "hello") {
		t.Errorf("no tool_result with hello in %+v", lines)
	}
	res := resultLine(t, lines)
	if res.Subtype != "success" || res.IsError || res.Result != "tool said: hello" {
		t.Errorf("result %+v", res)
	}
	checkBetaRequest(t, srv)
}

// hasToolResult reports whether a user line carries a tool_result whose
// content mentions want.
func hasToolResult(lines []cliLine, want string) bool {
	for _, l := range lines {
		if l.Type != "user" {
			continue
		}
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(l.Message.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" && strings.Contains(string(b.Content), want) {
				return true
			}
		}
	}
	return false
}
