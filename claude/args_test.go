package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

func TestCommandArgsMapEveryOption(t *testing.T) {
	empty := ""
	opts := claude.Options{
		Model: "m", FallbackModel: "f", SystemPrompt: &empty, AppendSystemPrompt: "more",
		Tools: []string{"Read", "Bash"}, AllowedTools: []string{"Read", "Bash(git *)"}, DisallowedTools: []string{"Write"},
		MaxTurns: 3, MaxBudgetUSD: 1.5, PermissionMode: claude.PermissionPlan,
		Resume: "-abc", SessionID: "sid", ForkSession: true, Settings: `{"a":1}`,
		AddDirs: []string{"/x", "/y"}, SettingSources: []string{}, Betas: []string{"b1"},
		IncludePartialMessages: true, IncludeHookEvents: true, StrictMCPConfig: true,
		Thinking: &claude.Thinking{Type: "adaptive"}, Effort: "high", JSONSchema: json.RawMessage(`{"type":"object"}`),
		MCPServers:    map[string]json.RawMessage{"ext": json.RawMessage(`{"type":"stdio","command":"srv"}`)},
		SDKMCPServers: map[string]*mcp.Server{"calc": nil},
		CanUseTool: func(context.Context, claude.PermissionRequest) (claude.PermissionResult, error) {
			return claude.Allow{}, nil
		},
		ExtraArgs: []string{"--debug-file", "/tmp/d"},
	}
	args, err := opts.CommandArgs()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	for _, want := range []string{
		"--output-format stream-json --verbose --input-format stream-json",
		"--system-prompt  --append-system-prompt more", "--tools Read,Bash",
		"--allowedTools Read,Bash(git *)", "--disallowedTools Write", "--max-turns 3", "--max-budget-usd 1.5",
		"--model m", "--fallback-model f", "--betas b1", "--permission-prompt-tool stdio", "--permission-mode plan",
		"--resume=-abc", "--session-id=sid", "--fork-session", `--settings {"a":1}`, "--add-dir /x --add-dir /y",
		`--mcp-config {"mcpServers":{"calc":{"name":"calc","type":"sdk"},"ext":{"type":"stdio","command":"srv"}}}`,
		"--strict-mcp-config", "--include-partial-messages", "--include-hook-events", "--setting-sources=",
		"--thinking adaptive", "--effort high", `--json-schema {"type":"object"}`, "--debug-file /tmp/d",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("argv lacks %q:\n%s", want, got)
		}
	}
	if slices.Contains(args, "-p") || slices.Contains(args, "--print") {
		t.Error("prompt-mode flag in argv; the prompt goes on stdin")
	}
}

func TestCommandArgsRejectConflicts(t *testing.T) {
	allow := func(context.Context, claude.PermissionRequest) (claude.PermissionResult, error) {
		return claude.Allow{}, nil
	}
	for name, o := range map[string]claude.Options{
		"callback and prompt tool": {CanUseTool: allow, PermissionPromptToolName: "mcp__x"},
		"fallback equals model":    {Model: "a", FallbackModel: "a"},
		"continue and resume":      {Continue: true, Resume: "x"},
		"bad schema":               {JSONSchema: json.RawMessage("{")},
	} {
		if _, err := o.CommandArgs(); !errors.Is(err, claude.ErrInvalidOptions) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestCommandEnvHygiene(t *testing.T) {
	t.Setenv("CLAUDECODE", "1")
	t.Setenv("CLAUDE_AGENT_SDK_VERSION", "spoofed")
	env := (&claude.Options{Env: map[string]string{"CLAUDE_CODE_ENTRYPOINT": "custom", "X": "y"}, Cwd: "/w"}).CommandEnv()
	joined := "\n" + strings.Join(env, "\n") + "\n"
	for _, want := range []string{"\nCLAUDE_CODE_ENTRYPOINT=custom\n", "\nX=y\n", "\nPWD=/w\n", "\nCLAUDE_AGENT_SDK_VERSION=0.1.0\n"} {
		if !strings.Contains(joined, want) {
			t.Errorf("env lacks %q", strings.TrimSpace(want))
		}
	}
	if strings.Contains(joined, "\nCLAUDECODE=") {
		t.Error("CLAUDECODE leaked into the child")
	}
	replaced := (&claude.Options{ReplaceEnv: true, Env: map[string]string{"A": "b"}}).CommandEnv()
	if len(replaced) != 3 || !slices.Contains(replaced, "CLAUDE_CODE_ENTRYPOINT=sdk-go") {
		t.Errorf("replaced env = %v", replaced)
	}
}

func TestRealCLIVersionProbe(t *testing.T) {
	cli := testenv.RequireClaudeCLI(t)
	v, err := claude.CLIVersion(context.Background(), cli)
	if err != nil || !claude.VersionAtLeast(v, claude.MinimumCLIVersion) {
		t.Fatalf("version %q err %v", v, err)
	}
	if claude.VersionAtLeast("1.9.9", "2.0.0") || !claude.VersionAtLeast("2.10.0", "2.9.1") {
		t.Fatal("version comparison is wrong")
	}
	if p, err := claude.FindCLI(cli); err != nil || p != cli {
		t.Fatalf("FindCLI(explicit) = %q, %v", p, err)
	}
}
