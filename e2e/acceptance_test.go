package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/testenv"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// The SDK's acceptance scenarios against the real CLI, written once against
// a target and run three times: with a local CLI, and through a runner with
// and without its sandbox, where the only difference is Options.Runner.

// target makes the options for one scenario.
type target struct {
	fake *fakeanthropic.Server
	// opts returns fresh options for one session (a fresh workspace) and
	// the directory the CLI works in, as seen by this test.
	opts func(t *testing.T) (claude.Options, string)
}

// localTarget runs the CLI here, as claude/realcli_test.go does.
func localTarget(t *testing.T) target {
	cli := testenv.RequireClaudeCLI(t)
	fake, err := fakeanthropic.Start(fakeanthropic.Options{SlowChunkDelay: 100 * time.Millisecond, SlowChunks: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	return target{fake: fake, opts: func(t *testing.T) (claude.Options, string) {
		env := map[string]string{}
		for _, kv := range testenv.ClaudeEnv(t.TempDir(), fake.URL()) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		cwd := t.TempDir()
		return claude.Options{
			CLIPath: cli, Cwd: cwd, Env: env, ReplaceEnv: true,
			Model: "claude-sonnet-4-5", ControlTimeout: 30 * time.Second,
		}, cwd
	}}
}

// runnerTarget sends the same sessions to a runner.
func runnerTarget(tr *testRunner) target {
	return target{fake: tr.Fake, opts: func(t *testing.T) (claude.Options, string) {
		id := newWorkspaceID("acc")
		return claude.Options{
			Model: "claude-sonnet-4-5", ControlTimeout: 30 * time.Second,
			Runner: &claude.RunnerOptions{URL: tr.URL, Token: tr.Token, WorkspaceID: id},
		}, tr.WorkspaceDir(id)
	}}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var scenarios = []struct {
	name string
	run  func(t *testing.T, tg target)
}{
	{"TextTurn", scenarioTextTurn},
	{"TwoTurnsOneClient", scenarioTwoTurns},
	{"WriteAllowed", func(t *testing.T, tg target) { scenarioWrite(t, tg, true) }},
	{"WriteDenied", func(t *testing.T, tg target) { scenarioWrite(t, tg, false) }},
	{"PreToolUseDeny", scenarioHookDeny},
	{"PreToolUseRewrite", scenarioHookRewrite},
	{"GoMCPTool", scenarioMCPTool},
	{"Controls", scenarioControls},
	{"InterruptDuringSlowStream", scenarioInterrupt},
	{"ResumeByID", scenarioResume},
}

func runScenarios(t *testing.T, tg target) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			timed(t)
			sc.run(t, tg)
		})
	}
}

func TestRealCLIAcceptanceLocal(t *testing.T) {
	timed(t)
	runScenarios(t, localTarget(t))
}

func TestRealCLIAcceptanceRunnerSandbox(t *testing.T) {
	timed(t)
	runScenarios(t, runnerTarget(startRunner(t, true)))
}

func TestRealCLIAcceptanceRunnerNoSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("the sandboxed runner covers the same scenarios")
	}
	timed(t)
	runScenarios(t, runnerTarget(startRunner(t, false)))
}

func scenarioTextTurn(t *testing.T, tg target) {
	opts, _ := tg.opts(t)
	before := len(tg.fake.Requests())
	res, err := claude.FinalResult(claude.Query(testCtx(t), "SAY hi from go", opts))
	if err != nil {
		t.Fatal(err)
	}
	if res.Result != "hi from go" || res.SessionID == "" || res.TotalCostUSD <= 0 {
		t.Fatalf("result = %+v", res)
	}
	for _, r := range tg.fake.Requests()[before:] {
		if r.Method == "POST" && r.Path == "/v1/messages" {
			return
		}
	}
	t.Fatal("the CLI never called the fake model")
}

func scenarioTwoTurns(t *testing.T, tg target) {
	opts, _ := tg.opts(t)
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

func scenarioWrite(t *testing.T, tg target, allow bool) {
	opts, dir := tg.opts(t)
	target := filepath.Join(dir, "hello.txt")
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
	if allow {
		if b, _ := os.ReadFile(target); string(b) != fakeanthropic.WriteContent {
			t.Fatalf("%s holds %q", target, b)
		}
	}
}

func scenarioHookDeny(t *testing.T, tg target) {
	opts, _ := tg.opts(t)
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
}

func scenarioHookRewrite(t *testing.T, tg target) {
	opts, _ := tg.opts(t)
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
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func newCalcServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers"}, func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	return s
}

func scenarioMCPTool(t *testing.T, tg target) {
	opts, _ := tg.opts(t)
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

func scenarioControls(t *testing.T, tg target) {
	opts, _ := tg.opts(t)
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
	// The CLI connects MCP servers in the background: right after
	// initialize the list can still be empty.
	var servers []claude.MCPServerStatus
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if servers, err = c.MCPStatus(ctx); err != nil {
			t.Fatal(err)
		}
		if len(servers) > 0 || time.Now().After(deadline) {
			break
		}
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

func scenarioInterrupt(t *testing.T, tg target) {
	opts, _ := tg.opts(t)
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

func scenarioResume(t *testing.T, tg target) {
	opts, _ := tg.opts(t)
	first, err := claude.FinalResult(claude.Query(testCtx(t), "SAY remember the word pelican", opts))
	if err != nil {
		t.Fatal(err)
	}
	opts.Resume = first.SessionID
	second, err := claude.FinalResult(claude.Query(testCtx(t), "SAY resumed", opts))
	if err != nil {
		t.Fatal(err)
	}
	// Stricter than claude/realcli_test.go: the answer must be the new
	// turn's, not a replay of the first.
	if second.SessionID != first.SessionID || second.Result != "resumed" {
		t.Fatalf("resume: first %s %q -> second %s %q", first.SessionID, first.Result, second.SessionID, second.Result)
	}
	reqs := tg.fake.Requests()
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
