package mockclaude

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// options is what the mock understood from its argv.
type options struct {
	outputFormat         string
	inputFormat          string
	verbose              bool
	model                string
	permissionPromptTool string
	partial              bool // --include-partial-messages
	resume               string
	sessionID            string
	permissionMode       string
	mcpConfigs           []string
	version              bool
	prompt               string // first positional argument (print mode)
}

// takesValue reports flags of the real CLI that take a separate value, so
// the value is not mistaken for a positional prompt.
func takesValue(name string) bool {
	switch name {
	case "system-prompt", "append-system-prompt", "system-prompt-file", "append-system-prompt-file",
		"tools", "allowedTools", "allowed-tools", "disallowedTools", "disallowed-tools",
		"max-turns", "max-budget-usd", "task-budget", "fallback-model", "betas", "settings",
		"add-dir", "setting-sources", "plugin-dir", "thinking", "max-thinking-tokens",
		"thinking-display", "effort", "json-schema", "agents", "agent", "debug-file",
		"resume-session-at", "resume-drops-turn", "sdk-url":
		return true
	}
	return false
}

// parseArgs reads the flags the SDKs pass; unknown flags are ignored.
func parseArgs(args []string) options {
	var o options
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takeValue := func() string {
			if hasVal {
				return val
			}
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch name {
		case "output-format":
			o.outputFormat = takeValue()
		case "input-format":
			o.inputFormat = takeValue()
		case "verbose":
			o.verbose = true
		case "model":
			o.model = takeValue()
		case "permission-prompt-tool":
			o.permissionPromptTool = takeValue()
		case "include-partial-messages":
			o.partial = true
		case "session-id":
			o.sessionID = takeValue()
		case "permission-mode":
			o.permissionMode = takeValue()
		case "mcp-config":
			o.mcpConfigs = append(o.mcpConfigs, takeValue())
		case "resume", "r":
			// --resume takes an optional value; the SDKs use the = form.
			if hasVal {
				o.resume = val
			} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				o.resume = args[i]
			}
		case "v", "version":
			o.version = true
		default:
			if takesValue(name) && !hasVal && i+1 < len(args) {
				i++
			}
		}
	}
	if len(positional) > 0 {
		o.prompt = positional[0]
	}
	return o
}

// sdkServersFromMCPConfig returns the names of `{"type":"sdk"}` servers in
// --mcp-config values (inline JSON or a file path), sorted.
func sdkServersFromMCPConfig(values []string) ([]string, []string) {
	var names, problems []string
	for _, v := range values {
		data := []byte(strings.TrimSpace(v))
		if len(data) == 0 {
			continue
		}
		if data[0] != '{' {
			b, err := os.ReadFile(filepath.Clean(v))
			if err != nil {
				problems = append(problems, fmt.Sprintf("--mcp-config %s: %v", v, err))
				continue
			}
			data = b
		}
		var cfg struct {
			MCPServers map[string]struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			problems = append(problems, fmt.Sprintf("--mcp-config: %v", err))
			continue
		}
		var found []string
		for key, srv := range cfg.MCPServers {
			if srv.Type != "sdk" {
				continue
			}
			if srv.Name != "" {
				key = srv.Name
			}
			found = append(found, key)
		}
		sort.Strings(found)
		names = append(names, found...)
	}
	return names, problems
}
