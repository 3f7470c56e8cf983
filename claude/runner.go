package claude

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	cc "github.com/tetherhq/tether/protocol/claudecode"
	"github.com/tetherhq/tether/transport"
	"github.com/tetherhq/tether/transport/remote"
)

// RunnerOptions send the session to a runner (`tether serve`) instead of
// starting the CLI here. Everything else works the same: permission
// callbacks, hooks and in-process MCP servers run in this process, and the
// connection resumes by itself after a drop.
type RunnerOptions struct {
	// URL is the runner's sessions endpoint, e.g. ws://127.0.0.1:7420/sessions.
	URL   string
	Token string
	// WorkspaceID names the runner-side workspace (kept across sessions).
	WorkspaceID    string
	ConnectTimeout time.Duration
	InitTimeout    time.Duration
	ReconnectFor   time.Duration
	OnHealth       func(remote.Health)
}

// runnerTransport maps the options onto a session on the runner. Options
// that only make sense for a local process are refused, not ignored.
func (o *Options) runnerTransport() (transport.Transport, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	local := map[string]bool{
		"CLIPath": o.CLIPath != "", "Env": len(o.Env) > 0, "Settings": o.Settings != "",
		"MCPServers": len(o.MCPServers) > 0, "ExtraArgs": len(o.ExtraArgs) > 0,
		"SystemPromptFile": o.SystemPromptFile != "", "Continue": o.Continue,
		"PermissionPromptToolName": o.PermissionPromptToolName != "", "PluginDirs": len(o.PluginDirs) > 0,
		"SettingSources": o.SettingSources != nil, "Bare": o.Bare,
		// Not (yet) carried to the runner: refused rather than silently
		// dropped, which would resume instead of fork, lose the structured
		// output, the thinking budget, the checkpoints RewindFiles needs …
		"ForkSession": o.ForkSession, "SessionID": o.SessionID != "", "ResumeSessionAt": o.ResumeSessionAt != "",
		"JSONSchema": len(o.JSONSchema) > 0, "Thinking": o.Thinking != nil,
		"EnableFileCheckpointing": o.EnableFileCheckpointing, "IncludeHookEvents": o.IncludeHookEvents,
		"AllowDangerouslySkipPermissions": o.AllowDangerouslySkipPermissions,
	}
	for name, set := range local {
		if set {
			return nil, fmt.Errorf("%w: %s is not available with a runner (the runner decides it, or does not support it yet)", ErrInvalidOptions, name)
		}
	}
	for _, d := range o.AddDirs {
		if !filepath.IsLocal(d) {
			return nil, fmt.Errorf("%w: AddDirs must be relative to the runner's workspace", ErrInvalidOptions)
		}
	}
	raw, err := json.Marshal(cc.SessionOptions{
		Model: o.Model, FallbackModel: o.FallbackModel, SystemPrompt: o.SystemPrompt,
		AppendSystemPrompt: o.AppendSystemPrompt, MaxTurns: o.MaxTurns, MaxBudgetUSD: o.MaxBudgetUSD,
		PermissionMode: string(o.PermissionMode), AllowedTools: o.AllowedTools, DisallowedTools: o.DisallowedTools,
		Tools: o.Tools, IncludePartialMessages: o.IncludePartialMessages, Effort: o.Effort, Betas: o.Betas,
		Agents: o.Agents, AddDirs: o.AddDirs, SDKMCPServers: o.sdkServerNames(),
		PermissionPromptStdio: o.CanUseTool != nil,
	})
	if err != nil {
		return nil, err
	}
	r := o.Runner
	return &remote.Transport{
		URL: r.URL, Token: r.Token, WorkspaceID: r.WorkspaceID, SessionOpts: raw, Resume: o.Resume,
		ConnectTimeout: r.ConnectTimeout, InitTimeout: r.InitTimeout, ReconnectFor: r.ReconnectFor,
		OnHealth: r.OnHealth, Logger: o.Logger,
	}, nil
}
