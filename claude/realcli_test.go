package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/fakeanthropic"
	"github.com/tetherhq/tether/internal/testenv"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// realCLI starts a fake model server and returns options that run the real
// pinned CLI against it, offline, in a fresh home and working directory.
func realCLI(t *testing.T) (claude.Options, *fakeanthropic.Server) {
	t.Helper()
	cli := testenv.RequireClaudeCLI(t)
	srv, err := fakeanthropic.Start(fakeanthropic.Options{SlowChunkDelay: 100 * time.Millisecond, SlowChunks: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	env := map[string]string{}
	for _, kv := range testenv.ClaudeEnv(t.TempDir(), srv.URL()) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return claude.Options{
		CLIPath: cli, Cwd: t.TempDir(), Env: env, ReplaceEnv: true,
		Model: "claude-sonnet-4-5", ControlTimeout: 30 * time.Second,
	}, srv
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRealCLITextTurn(t *testing.T) {
	opts, srv := realCLI(t)
	res, err := claude.FinalResult(claude.Query(testCtx(t), "SAY hi from go", opts))
	if err != nil {
		t.Fatal(err)
	}
	if res.Result != "hi from go" || res.SessionID == "" || res.TotalCostUSD <= 0 {
		t.Fatalf("result = %+v", res)
	}
	for _, r := range srv.Requests() {
		if r.Method == "POST" && r.Path == "/v1/messages" {
			return
		}
	}
	t.Fatal("the CLI never called the fake model")
}

func TestRealCLITwoTurnsOneClient(t *testing.T) {
	opts, _ := realCLI(t)
	ctx := testCtx(t)
	c, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var results []string
	for _, prompt := range []string{"SAY first", "SAY second"} {
		if err := c.Query(ctx, prompt); err != nil {
			t.Fatal(err)
		}
		res, err := claude.FinalResult(c.Receive(ctx))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res.Result)
	}
	if strings.Join(results, ",") != "first,second" || c.Totals().Results != 2 {
		t.Fatalf("results = %v totals = %+v", results, c.Totals())
	}
}

func TestRealCLIWriteAllowedAndDenied(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "allow", false: "deny"}[allow], func(t *testing.T) {
			opts, _ := realCLI(t)
			target := filepath.Join(opts.Cwd, "hello.txt")
			var asked []string
			opts.CanUseTool = func(_ context.Context, r claude.PermissionRequest) (claude.PermissionResult, error) {
				asked = append(asked, r.ToolName)
				if allow {
					return claude.Allow{}, nil
				}
				return claude.Deny{Message: "not in this test"}, nil
			}
			var toolErr *bool
			for msg, err := range claude.Query(testCtx(t), "please USE_WRITE "+target, opts) {
				if err != nil {
					t.Fatal(err)
				}
				if u, ok := msg.(*claude.UserMessage); ok {
					for _, b := range u.Message.Content {
						if tr, ok := b.(claude.ToolResultBlock); ok {
							e := tr.IsError
							toolErr = &e
						}
					}
				}
			}
			_, statErr := os.Stat(target)
			if len(asked) != 1 || asked[0] != "Write" || toolErr == nil || *toolErr == allow || (statErr == nil) != allow {
				t.Fatalf("asked %v, tool error %v, file exists %v", asked, toolErr, statErr == nil)
			}
		})
	}
}

func TestRealCLIPreToolUseHooks(t *testing.T) {
	t.Run("deny", func(t *testing.T) {
		opts, _ := realCLI(t)
		opts.AllowedTools = []string{"Bash"}
		opts.Hooks = map[string][]claude.HookMatcher{cc.HookPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{
			func(_ context.Context, in claude.HookInput) (claude.HookOutput, error) {
				return claude.DenyTool("blocked by a Go hook"), nil
			}}}}}
		res, err := claude.FinalResult(claude.Query(testCtx(t), "USE_BASH", opts))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Result, "blocked by a Go hook") {
			t.Fatalf("result = %q", res.Result)
		}
	})
	t.Run("rewrite", func(t *testing.T) {
		opts, _ := realCLI(t)
		opts.AllowedTools = []string{"Bash"}
		var seen string
		opts.Hooks = map[string][]claude.HookMatcher{cc.HookPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{
			func(_ context.Context, in claude.HookInput) (claude.HookOutput, error) {
				seen = string(in.ToolInput)
				return claude.RewriteToolInput([]byte(`{"command":"echo rewritten-by-go"}`), "safer"), nil
			}}}}}
		res, err := claude.FinalResult(claude.Query(testCtx(t), "USE_BASH", opts))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(seen, "echo hello") || res.Result != "tool said: rewritten-by-go" {
			t.Fatalf("hook saw %s; result = %q", seen, res.Result)
		}
	})
}

func TestRealCLICallsGoMCPTool(t *testing.T) {
	opts, _ := realCLI(t)
	opts.SDKMCPServers = map[string]*mcp.Server{"calc": newCalcServer()}
	opts.AllowedTools = []string{"mcp__calc__add"}
	res, err := claude.FinalResult(claude.Query(testCtx(t), `USE_TOOL mcp__calc__add {"a":2,"b":3}`, opts))
	if err != nil {
		t.Fatal(err)
	}
	if res.Result != "tool said: 5" {
		t.Fatalf("result = %q", res.Result)
	}
}

func TestRealCLIControls(t *testing.T) {
	opts, _ := realCLI(t)
	opts.SDKMCPServers = map[string]*mcp.Server{"calc": newCalcServer()}
	opts.Model = "claude-haiku-4-5"
	ctx := testCtx(t)
	c, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetModel(ctx, "claude-sonnet-4-5"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPermissionMode(ctx, claude.PermissionAcceptEdits); err != nil {
		t.Fatal(err)
	}
	var ce *claude.ControlError
	if err := c.SetPermissionMode(ctx, "no-such-mode"); !errors.As(err, &ce) {
		t.Fatalf("invalid mode: err = %v", err)
	}
	servers, err := c.MCPStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 1 || servers[0].Name != "calc" {
		t.Fatalf("mcp_status = %+v", servers)
	}
	if err := c.Query(ctx, "SAY after controls"); err != nil {
		t.Fatal(err)
	}
	var model, mode string
	for msg, err := range c.Receive(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := msg.(*claude.SystemMessage); ok && s.Subtype == cc.SystemInit {
			model, mode = s.Model, s.PermissionMode
		}
	}
	if model != "claude-sonnet-4-5" || mode != "acceptEdits" {
		t.Fatalf("next turn runs model %q in mode %q", model, mode)
	}
}

func TestRealCLIInterruptDuringSlowStream(t *testing.T) {
	opts, _ := realCLI(t)
	opts.IncludePartialMessages = true
	ctx := testCtx(t)
	c, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Query(ctx, "be SLOW please"); err != nil {
		t.Fatal(err)
	}
	var res *claude.ResultMessage
	interrupted := false
	for msg, err := range c.Receive(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if ev, ok := msg.(*claude.StreamEvent); ok && !interrupted {
			if _, isText := ev.TextDelta(); isText {
				interrupted = true
				if err := c.Interrupt(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		if r, ok := msg.(*claude.ResultMessage); ok {
			res = r
		}
	}
	if !interrupted || res == nil || res.Subtype != cc.ResultErrorDuringExecution || !res.IsError {
		t.Fatalf("interrupted=%v result=%+v", interrupted, res)
	}
	// The same process takes the next turn.
	if err := c.Query(ctx, "SAY still here"); err != nil {
		t.Fatal(err)
	}
	next, err := claude.FinalResult(c.Receive(ctx))
	if err != nil || next.Result != "still here" {
		t.Fatalf("after interrupt: %v %+v", err, next)
	}
}

func TestRealCLIResumeByID(t *testing.T) {
	opts, srv := realCLI(t)
	first, err := claude.FinalResult(claude.Query(testCtx(t), "SAY remember the word pelican", opts))
	if err != nil {
		t.Fatal(err)
	}
	opts.Resume = first.SessionID
	second, err := claude.FinalResult(claude.Query(testCtx(t), "SAY resumed", opts))
	if err != nil {
		t.Fatal(err)
	}
	if second.SessionID != first.SessionID {
		t.Fatalf("resume changed the session: %s -> %s", first.SessionID, second.SessionID)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if !strings.Contains(string(last.Body), "pelican") {
		t.Fatal("the resumed turn did not carry the earlier history")
	}
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(last.Body, &body)
	if len(body.Messages) < 3 {
		t.Fatalf("resumed request has %d messages", len(body.Messages))
	}
}
