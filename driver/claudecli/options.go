package claudecli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// ErrInvalidOptions matches session options the runner refuses; it is an
// agent.ErrInvalidOptions.
var ErrInvalidOptions = fmt.Errorf("claudecli: %w", agent.ErrInvalidOptions)

// SessionOptions are the options a host may set (protocol v1's
// session_opts for Claude Code).
type SessionOptions = cc.SessionOptions

var permissionModes = map[string]bool{
	"": true, "default": true, "acceptEdits": true, "plan": true,
	"bypassPermissions": true, "dontAsk": true, "auto": true,
}

// ParseOptions decodes and checks options; unknown fields are refused so a
// typo or a policy escape never passes silently.
func ParseOptions(raw json.RawMessage) (SessionOptions, error) {
	var o SessionOptions
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return o, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return o, fmt.Errorf("%w: %v", ErrInvalidOptions, explain(err))
	}
	if !permissionModes[o.PermissionMode] {
		return o, fmt.Errorf("%w: unknown permission_mode %q", ErrInvalidOptions, o.PermissionMode)
	}
	if o.MaxTurns < 0 || o.MaxBudgetUSD < 0 {
		return o, fmt.Errorf("%w: limits must not be negative", ErrInvalidOptions)
	}
	if o.Cwd != "" && !filepath.IsLocal(o.Cwd) {
		return o, fmt.Errorf("%w: cwd %q is not a directory inside the workspace (give a relative path such as \"src/app\")", ErrInvalidOptions, o.Cwd)
	}
	for _, d := range o.AddDirs {
		if filepath.IsAbs(d) || !filepath.IsLocal(d) {
			return o, fmt.Errorf("%w: add_dirs entry %q is outside the workspace", ErrInvalidOptions, d)
		}
	}
	for _, s := range append(append(append([]string{o.Model, o.FallbackModel, o.Effort}, o.AllowedTools...), o.DisallowedTools...), o.Tools...) {
		if strings.HasPrefix(s, "-") {
			return o, fmt.Errorf("%w: value %q looks like a flag", ErrInvalidOptions, s)
		}
	}
	return o, nil
}

// explain names the refused field for the common case.
func explain(err error) string {
	msg := err.Error()
	if field, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "field " + field + " is not allowed: the runner decides it (or it does not exist)"
	}
	return msg
}

// apply maps the options onto SDK options for a CLI in workspace.
func apply(o SessionOptions, opts *claude.Options, workspace string) {
	opts.Model, opts.FallbackModel = o.Model, o.FallbackModel
	opts.SystemPrompt, opts.AppendSystemPrompt = o.SystemPrompt, o.AppendSystemPrompt
	opts.MaxTurns, opts.MaxBudgetUSD = o.MaxTurns, o.MaxBudgetUSD
	opts.PermissionMode = claude.PermissionMode(o.PermissionMode)
	opts.AllowedTools, opts.DisallowedTools, opts.Tools = o.AllowedTools, o.DisallowedTools, o.Tools
	opts.IncludePartialMessages, opts.Effort, opts.Betas = o.IncludePartialMessages, o.Effort, o.Betas
	opts.Agents = o.Agents
	if len(o.SDKMCPServers) > 0 {
		opts.SDKMCPServers = map[string]*mcp.Server{}
		for _, name := range o.SDKMCPServers {
			opts.SDKMCPServers[name] = nil // a stub in --mcp-config; the host serves it
		}
	}
	if o.PermissionPromptStdio {
		opts.PermissionPromptToolName = "stdio"
	}
	for _, d := range o.AddDirs {
		opts.AddDirs = append(opts.AddDirs, filepath.Join(workspace, d))
	}
}

// workingDir is the directory the agent starts in: the workspace, or the
// existing directory cwd names inside it (symlinks resolved, so a link
// cannot lead the agent out).
func workingDir(workspace, cwd string) (string, error) {
	if cwd == "" {
		return workspace, nil
	}
	ws, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(ws, cwd))
	if err != nil {
		return "", fmt.Errorf("%w: cwd %q: no such directory in the workspace", ErrInvalidOptions, cwd)
	}
	if rel, err := filepath.Rel(ws, dir); err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w: cwd %q leads outside the workspace", ErrInvalidOptions, cwd)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: cwd %q is not a directory", ErrInvalidOptions, cwd)
	}
	return dir, nil
}
