package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// EntrypointEnv identifies this SDK to the CLI.
const (
	entrypoint = "sdk-go"
	sdkVersion = "0.1.0"
)

// ErrInvalidOptions matches option combinations the CLI would reject.
var ErrInvalidOptions = errors.New("claude: invalid options")

// CommandArgs builds the CLI's argv (without the program). The prompt never
// goes on argv; agents, hooks and SDK MCP servers travel in initialize.
func (o *Options) CommandArgs() ([]string, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	a := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}
	add := func(flag, v string) {
		if v != "" {
			a = append(a, flag, v)
		}
	}
	addEq := func(flag, v string) { // ids: a value starting with "-" must not read as a flag
		if v != "" {
			a = append(a, flag+"="+v)
		}
	}
	if o.SystemPrompt != nil {
		a = append(a, "--system-prompt", *o.SystemPrompt)
	}
	add("--system-prompt-file", o.SystemPromptFile)
	add("--append-system-prompt", o.AppendSystemPrompt)
	if o.Tools != nil {
		a = append(a, "--tools", strings.Join(o.Tools, ","))
	}
	add("--allowedTools", strings.Join(o.AllowedTools, ","))
	add("--disallowedTools", strings.Join(o.DisallowedTools, ","))
	if o.MaxTurns > 0 {
		a = append(a, "--max-turns", strconv.Itoa(o.MaxTurns))
	}
	if o.MaxBudgetUSD > 0 {
		a = append(a, "--max-budget-usd", strconv.FormatFloat(o.MaxBudgetUSD, 'f', -1, 64))
	}
	add("--model", o.Model)
	add("--fallback-model", o.FallbackModel)
	add("--betas", strings.Join(o.Betas, ","))
	if o.CanUseTool != nil {
		a = append(a, "--permission-prompt-tool", "stdio")
	}
	add("--permission-prompt-tool", o.PermissionPromptToolName)
	add("--permission-mode", string(o.PermissionMode))
	if o.AllowDangerouslySkipPermissions {
		a = append(a, "--allow-dangerously-skip-permissions")
	}
	if o.Continue {
		a = append(a, "--continue")
	}
	addEq("--resume", o.Resume)
	addEq("--session-id", o.SessionID)
	addEq("--resume-session-at", o.ResumeSessionAt)
	if o.ForkSession {
		a = append(a, "--fork-session")
	}
	add("--settings", o.Settings)
	for _, d := range o.AddDirs {
		a = append(a, "--add-dir", d)
	}
	mcpConfig, err := o.mcpConfig()
	if err != nil {
		return nil, err
	}
	add("--mcp-config", mcpConfig)
	if o.StrictMCPConfig {
		a = append(a, "--strict-mcp-config")
	}
	if o.IncludePartialMessages {
		a = append(a, "--include-partial-messages")
	}
	if o.IncludeHookEvents {
		a = append(a, "--include-hook-events")
	}
	if o.SettingSources != nil {
		a = append(a, "--setting-sources="+strings.Join(o.SettingSources, ","))
	}
	for _, d := range o.PluginDirs {
		a = append(a, "--plugin-dir", d)
	}
	a = append(a, o.thinkingArgs()...)
	add("--effort", o.Effort)
	if len(o.JSONSchema) > 0 {
		a = append(a, "--json-schema", string(o.JSONSchema))
	}
	if o.Bare {
		a = append(a, "--bare")
	}
	return append(a, o.ExtraArgs...), nil
}

func (o *Options) validate() error {
	if o.CanUseTool != nil && o.PermissionPromptToolName != "" {
		return fmt.Errorf("%w: CanUseTool and PermissionPromptToolName are mutually exclusive", ErrInvalidOptions)
	}
	if o.FallbackModel != "" && o.FallbackModel == o.Model {
		return fmt.Errorf("%w: FallbackModel must differ from Model", ErrInvalidOptions)
	}
	if o.Continue && o.Resume != "" {
		return fmt.Errorf("%w: Continue and Resume are mutually exclusive", ErrInvalidOptions)
	}
	if len(o.JSONSchema) > 0 && !json.Valid(o.JSONSchema) {
		return fmt.Errorf("%w: JSONSchema is not valid JSON", ErrInvalidOptions)
	}
	for name := range o.SDKMCPServers {
		if _, dup := o.MCPServers[name]; dup {
			return fmt.Errorf("%w: MCP server %q is both external and in-process", ErrInvalidOptions, name)
		}
	}
	return nil
}

func (o *Options) thinkingArgs() []string {
	if o.Thinking == nil {
		return nil
	}
	var a []string
	switch o.Thinking.Type {
	case "enabled":
		if o.Thinking.BudgetTokens > 0 {
			a = append(a, "--max-thinking-tokens", strconv.Itoa(o.Thinking.BudgetTokens))
		}
	case "adaptive", "disabled":
		a = append(a, "--thinking", o.Thinking.Type)
	}
	if o.Thinking.Display != "" {
		a = append(a, "--thinking-display", o.Thinking.Display)
	}
	return a
}

// mcpConfig merges external servers and SDK server stubs.
func (o *Options) mcpConfig() (string, error) {
	if len(o.MCPServers) == 0 && len(o.SDKMCPServers) == 0 {
		return "", nil
	}
	servers := make(map[string]json.RawMessage, len(o.MCPServers)+len(o.SDKMCPServers))
	for name, cfg := range o.MCPServers {
		if !json.Valid(cfg) {
			return "", fmt.Errorf("%w: MCP server %q config is not valid JSON", ErrInvalidOptions, name)
		}
		servers[name] = cfg
	}
	for _, name := range o.sdkServerNames() {
		stub, _ := json.Marshal(map[string]string{"type": "sdk", "name": name})
		servers[name] = stub
	}
	out, err := json.Marshal(map[string]any{"mcpServers": servers})
	return string(out), err
}

func (o *Options) sdkServerNames() []string {
	names := make([]string, 0, len(o.SDKMCPServers))
	for name := range o.SDKMCPServers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// CommandEnv builds the child's environment.
func (o *Options) CommandEnv() []string {
	var base []string
	if !o.ReplaceEnv {
		base = os.Environ()
	}
	env := make(map[string]string, len(base)+len(o.Env)+4)
	order := make([]string, 0, len(base)+len(o.Env)+4)
	set := func(k, v string) {
		if _, seen := env[k]; !seen {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok {
			set(k, v)
		}
	}
	set("CLAUDE_CODE_ENTRYPOINT", entrypoint)
	keys := make([]string, 0, len(o.Env))
	for k := range o.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		set(k, o.Env[k])
	}
	if o.EnableFileCheckpointing {
		set("CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING", "true")
	}
	if o.Cwd != "" {
		set("PWD", o.Cwd)
	}
	set("CLAUDE_AGENT_SDK_VERSION", sdkVersion)
	out := make([]string, 0, len(order))
	for _, k := range order {
		if k == "CLAUDECODE" {
			continue
		}
		out = append(out, k+"="+env[k])
	}
	return out
}
