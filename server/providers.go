package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// provider is what one agent kind is handed of the runner's own
// configuration: its environment and the files written into each
// session's private home (relative paths).
type provider struct {
	env       map[string]string
	homeFiles map[string][]byte
}

// Where each model API is when its base URL variable is unset.
const (
	defaultAnthropicAPI = "https://api.anthropic.com"
	defaultOpenAIAPI    = "https://api.openai.com/v1"
)

// envPrefixes are the variables of the runner's environment each agent
// kind sees: its model API's settings and its own switches, never the
// runner's tokens nor another agent's keys.
func envPrefixes(kind string) []string {
	switch kind {
	case "codex":
		return []string{"OPENAI_"}
	case "opencode":
		return []string{"OPENAI_", "ANTHROPIC_", "OPENCODE_DISABLE_", "OPENCODE_EXPERIMENTAL"}
	default:
		return []string{"ANTHROPIC_", "CLAUDE_CODE_", "DISABLE_", "MCP_"}
	}
}

// agentEnv picks what agents of kind may see of getenv's environment
// (environ lists it): the variables with the kind's prefixes, the locale,
// PATH, and the names in extra.
func agentEnv(kind string, environ []string, extra []string) map[string]string {
	keep := map[string]bool{"PATH": true, "LANG": true, "LC_ALL": true, "TZ": true}
	for _, k := range extra {
		keep[k] = true
	}
	env := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if keep[k] {
			env[k] = v
			continue
		}
		for _, p := range envPrefixes(kind) {
			if strings.HasPrefix(k, p) {
				env[k] = v
			}
		}
	}
	return env
}

// claudeProvider hands Claude Code the Anthropic settings of env; with the
// sandbox, its key and auth token reach the API through a key proxy.
func claudeProvider(env map[string]string, proxies *keyProxies) (provider, error) {
	creds := map[string]string{}
	if k := env["ANTHROPIC_API_KEY"]; k != "" {
		creds["x-api-key"] = k
	}
	if k := env["ANTHROPIC_AUTH_TOKEN"]; k != "" {
		creds["Authorization"] = k
	}
	if !proxies.sandboxed || len(creds) == 0 {
		return provider{env: env}, nil
	}
	url, err := proxies.behind(orDefault(env["ANTHROPIC_BASE_URL"], defaultAnthropicAPI), creds)
	if err != nil {
		return provider{}, err
	}
	out := maps.Clone(env)
	out["ANTHROPIC_BASE_URL"] = url
	for name, header := range map[string]string{"ANTHROPIC_API_KEY": "x-api-key", "ANTHROPIC_AUTH_TOKEN": "Authorization"} {
		if _, ok := creds[header]; ok {
			out[name] = proxies.token
		}
	}
	return provider{env: out}, nil
}

// codexProvider hands Codex the runner's own Codex configuration: its
// config.toml, found as Codex finds it ($CODEX_HOME, else ~/.codex), is
// written to .codex/config.toml of each session's home. With the sandbox,
// each provider whose key variable the runner holds (the built-in OpenAI
// one through OPENAI_BASE_URL) is reached through a key proxy: the config
// names the proxy and the variable holds the stand-in key.
func codexProvider(env map[string]string, getenv func(string) string, proxies *keyProxies) (provider, error) {
	dir := getenv("CODEX_HOME")
	if dir == "" {
		dir = filepath.Join(getenv("HOME"), ".codex")
	}
	raw, err := readOptional(filepath.Join(dir, "config.toml"))
	if err != nil {
		return provider{}, err
	}
	files := map[string][]byte{}
	if !proxies.sandboxed {
		if raw != nil {
			files[".codex/config.toml"] = raw
		}
		return provider{env: env, homeFiles: files}, nil
	}
	doc := map[string]any{}
	if err := toml.Unmarshal(raw, &doc); err != nil {
		return provider{}, fmt.Errorf("server: codex config %s: %w", filepath.Join(dir, "config.toml"), err)
	}
	out := maps.Clone(env)
	hidden := map[string]bool{}
	providers, _ := doc["model_providers"].(map[string]any)
	for _, p := range providers {
		p, _ := p.(map[string]any)
		base, _ := p["base_url"].(string)
		if base == "" {
			continue
		}
		if token, _ := p["experimental_bearer_token"].(string); token != "" {
			if p["base_url"], err = proxies.behind(base, map[string]string{"Authorization": token}); err != nil {
				return provider{}, err
			}
			p["experimental_bearer_token"] = proxies.token
			continue
		}
		keyVar, _ := p["env_key"].(string)
		if key := env[keyVar]; key != "" {
			if p["base_url"], err = proxies.behind(base, map[string]string{"Authorization": key}); err != nil {
				return provider{}, err
			}
			hidden[keyVar] = true
		}
	}
	if key := env["OPENAI_API_KEY"]; key != "" {
		url, err := proxies.behind(orDefault(env["OPENAI_BASE_URL"], defaultOpenAIAPI), map[string]string{"Authorization": key})
		if err != nil {
			return provider{}, err
		}
		out["OPENAI_BASE_URL"] = url
		hidden["OPENAI_API_KEY"] = true
	}
	for name := range hidden {
		out[name] = proxies.token
	}
	if len(doc) > 0 {
		if files[".codex/config.toml"], err = toml.Marshal(doc); err != nil {
			return provider{}, fmt.Errorf("server: codex config: %w", err)
		}
	}
	return provider{env: out, homeFiles: files}, nil
}

// openCodeProvider hands OpenCode the runner's own OpenCode configuration:
// $OPENCODE_CONFIG, else opencode.json in $XDG_CONFIG_HOME/opencode (or
// ~/.config/opencode), written to .config/opencode/opencode.json of each
// session's home. With the sandbox, each provider whose key the runner
// holds (in the file, in a variable the file names as {env:NAME}, or
// OPENAI_API_KEY / ANTHROPIC_API_KEY for the built-in providers) is
// reached through a key proxy, and no real key is left in the file or the
// environment.
func openCodeProvider(env map[string]string, getenv func(string) string, proxies *keyProxies) (provider, error) {
	path := getenv("OPENCODE_CONFIG")
	if path == "" {
		cfgHome := getenv("XDG_CONFIG_HOME")
		if cfgHome == "" {
			cfgHome = filepath.Join(getenv("HOME"), ".config")
		}
		path = filepath.Join(cfgHome, "opencode", "opencode.json")
	}
	raw, err := readOptional(path)
	if err != nil {
		return provider{}, err
	}
	const target = ".config/opencode/opencode.json"
	files := map[string][]byte{}
	if !proxies.sandboxed {
		if raw != nil {
			files[target] = raw
		}
		return provider{env: env, homeFiles: files}, nil
	}
	doc := map[string]any{}
	if raw != nil {
		if err := json.Unmarshal(raw, &doc); err != nil {
			return provider{}, fmt.Errorf("server: opencode config %s (a sandboxed runner rewrites it, so it must be plain JSON): %w", path, err)
		}
	}
	out := maps.Clone(env)
	if err := proxyOpenCodeProviders(doc, env, out, proxies); err != nil {
		return provider{}, err
	}
	if len(doc) > 0 {
		if files[target], err = json.MarshalIndent(doc, "", "  "); err != nil {
			return provider{}, fmt.Errorf("server: opencode config: %w", err)
		}
	}
	return provider{env: out, homeFiles: files}, nil
}

// openCodeBuiltin is a built-in provider whose key a runner's environment
// may hold: its key variable, upstream and header.
type openCodeBuiltin struct{ keyVar, upstream, header string }

func openCodeBuiltins() map[string]openCodeBuiltin {
	return map[string]openCodeBuiltin{
		"openai":    {"OPENAI_API_KEY", defaultOpenAIAPI, "Authorization"},
		"anthropic": {"ANTHROPIC_API_KEY", defaultAnthropicAPI + "/v1", "x-api-key"},
	}
}

// proxyOpenCodeProviders points doc's providers at key proxies: keys are
// read from env, and the stand-ins written to out.
func proxyOpenCodeProviders(doc map[string]any, env, out map[string]string, proxies *keyProxies) error {
	builtins := openCodeBuiltins()
	providers, _ := doc["provider"].(map[string]any)
	for id, b := range builtins {
		if _, ok := providers[id]; !ok && env[b.keyVar] != "" {
			if providers == nil {
				providers = map[string]any{}
				doc["provider"] = providers
			}
			providers[id] = map[string]any{}
		}
	}
	for id, p := range providers {
		p, _ := p.(map[string]any)
		if p == nil {
			continue
		}
		opts, _ := p["options"].(map[string]any)
		if opts == nil {
			opts = map[string]any{}
		}
		builtin := builtins[id]
		base, _ := opts["baseURL"].(string)
		base = orDefault(base, builtin.upstream)
		key, keyVar := openCodeKey(opts, env, builtin.keyVar)
		if key == "" || base == "" {
			continue
		}
		url, err := proxies.behind(base, map[string]string{orDefault(builtin.header, "Authorization"): key})
		if err != nil {
			return err
		}
		opts["baseURL"] = url
		if keyVar != "" {
			out[keyVar] = proxies.token
		} else {
			opts["apiKey"] = proxies.token
		}
		p["options"] = opts
	}
	return nil
}

// openCodeKey is a provider's real key: the options' apiKey (a literal, or
// {env:NAME}), else the built-in provider's variable. keyVar names the
// variable it came from; empty for a literal in the file.
func openCodeKey(opts map[string]any, env map[string]string, builtinVar string) (key, keyVar string) {
	apiKey, _ := opts["apiKey"].(string)
	if name, ok := strings.CutPrefix(apiKey, "{env:"); ok && strings.HasSuffix(name, "}") {
		name = strings.TrimSuffix(name, "}")
		return env[name], name
	}
	if apiKey != "" {
		return apiKey, ""
	}
	if builtinVar != "" {
		return env[builtinVar], builtinVar
	}
	return "", ""
}

// readOptional reads path; a missing file is nil, not an error.
func readOptional(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return b, nil
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
