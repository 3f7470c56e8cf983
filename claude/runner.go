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
//
// Options.Cwd and Options.AddDirs name directories inside the workspace,
// relative to it. Options the runner decides (CLIPath, Env, Settings,
// SettingSources, PluginDirs, MCPServers, SystemPromptFile, ExtraArgs,
// Bare, PermissionPromptToolName, Continue, SessionID) and those protocol
// v1 does not carry yet (ForkSession, ResumeSessionAt, JSONSchema,
// Thinking, EnableFileCheckpointing, IncludeHookEvents,
// AllowDangerouslySkipPermissions) make Connect fail with
// ErrInvalidOptions and a sentence saying why.
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
	for _, r := range o.runnerRefusals() {
		if r.set {
			return nil, fmt.Errorf("%w: %s cannot be used with a runner: %s", ErrInvalidOptions, r.name, r.why)
		}
	}
	if o.Cwd != "" && !filepath.IsLocal(o.Cwd) {
		return nil, fmt.Errorf("%w: Cwd %q is a path on this machine; with a runner, Cwd is a directory relative to the session's workspace, such as \"src/app\"", ErrInvalidOptions, o.Cwd)
	}
	for _, d := range o.AddDirs {
		if !filepath.IsLocal(d) {
			return nil, fmt.Errorf("%w: AddDirs entry %q is a path on this machine; with a runner, AddDirs are relative to the session's workspace", ErrInvalidOptions, d)
		}
	}
	raw, err := json.Marshal(cc.SessionOptions{
		Model: o.Model, FallbackModel: o.FallbackModel, SystemPrompt: o.SystemPrompt,
		AppendSystemPrompt: o.AppendSystemPrompt, MaxTurns: o.MaxTurns, MaxBudgetUSD: o.MaxBudgetUSD,
		PermissionMode: string(o.PermissionMode), AllowedTools: o.AllowedTools, DisallowedTools: o.DisallowedTools,
		Tools: o.Tools, IncludePartialMessages: o.IncludePartialMessages, Effort: o.Effort, Betas: o.Betas,
		Agents: o.Agents, Cwd: remoteCwd(o.Cwd), AddDirs: o.AddDirs, SDKMCPServers: o.sdkServerNames(),
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

// refusal is an option a runner session cannot honour, and why.
type refusal struct {
	name string
	set  bool
	why  string
}

// runnerRefusals lists, in a fixed order, the options that have no meaning
// on a runner (the runner decides them) or are not carried to it yet.
// Refused rather than dropped: a dropped ForkSession would resume the
// original instead of forking it, a dropped Env would run without it.
func (o *Options) runnerRefusals() []refusal {
	const notYet = "protocol v1 does not carry it yet"
	return []refusal{
		{"CLIPath", o.CLIPath != "", "the runner runs its own claude executable (tether serve --cli)"},
		{"Env", len(o.Env) > 0, "the agent's environment is the runner's (tether serve --agent-env names what it passes on), so secrets stay there"},
		{"Settings", o.Settings != "", "a settings file can run commands in the CLI's process; a runner loads none"},
		{"SettingSources", o.SettingSources != nil, "a runner loads no settings files"},
		{"PluginDirs", len(o.PluginDirs) > 0, "plugins run code in the CLI's process; a runner loads none"},
		{"MCPServers", len(o.MCPServers) > 0, "external MCP servers would run on the runner; SDKMCPServers run in this process and work with a runner"},
		{"SystemPromptFile", o.SystemPromptFile != "", "the file is on this machine; read it and set SystemPrompt"},
		{"ExtraArgs", len(o.ExtraArgs) > 0, "the runner builds the CLI's command line itself"},
		{"Bare", o.Bare, "the runner decides what the CLI loads"},
		{"PermissionPromptToolName", o.PermissionPromptToolName != "", "permission prompts come to CanUseTool in this process"},
		{"Continue", o.Continue, "a workspace on a runner has many sessions; resume one by its id with Resume"},
		{"SessionID", o.SessionID != "", "the runner names its sessions; Client.SessionID has the id once Connect returns"},
		{"ForkSession", o.ForkSession, notYet},
		{"ResumeSessionAt", o.ResumeSessionAt != "", notYet},
		{"JSONSchema", len(o.JSONSchema) > 0, notYet},
		{"Thinking", o.Thinking != nil, notYet},
		{"EnableFileCheckpointing", o.EnableFileCheckpointing, notYet + " (the runner snapshots the workspace in git instead)"},
		{"IncludeHookEvents", o.IncludeHookEvents, notYet},
		{"AllowDangerouslySkipPermissions", o.AllowDangerouslySkipPermissions, notYet + "; PermissionMode bypassPermissions is"},
	}
}

// remoteCwd is Cwd as session_opts carry it: clean, and omitted for the
// workspace itself.
func remoteCwd(cwd string) string {
	if cwd == "" || filepath.Clean(cwd) == "." {
		return ""
	}
	return filepath.Clean(cwd)
}
