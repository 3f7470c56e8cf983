package opencode

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/internal/agentproc"
)

// homeConfig is where a session's home holds OpenCode's configuration.
const homeConfig = ".config/opencode/opencode.json"

// provide hands OpenCode the runner's own OpenCode configuration:
// $OPENCODE_CONFIG, else opencode.json in $XDG_CONFIG_HOME/opencode (or
// ~/.config/opencode), written to .config/opencode/opencode.json of each
// session's home. With key proxies, each provider whose key the runner
// holds (in the file, in a variable the file names as {env:NAME}, or
// OPENAI_API_KEY / ANTHROPIC_API_KEY for the built-in providers) is
// reached through one, and no real key is left in the file or the
// environment.
func provide(req driver.ProviderRequest) (driver.Provision, error) {
	path := req.Getenv("OPENCODE_CONFIG")
	if path == "" {
		cfgHome := cmp.Or(req.Getenv("XDG_CONFIG_HOME"), filepath.Join(req.Getenv("HOME"), ".config"))
		path = filepath.Join(cfgHome, "opencode", "opencode.json")
	}
	raw, err := agentproc.ReadOptional(path)
	if err != nil {
		return driver.Provision{}, fmt.Errorf("opencode: %w", err)
	}
	files := map[string][]byte{}
	if req.Proxies == nil {
		if raw != nil {
			files[homeConfig] = raw
		}
		return driver.Provision{Env: maps.Clone(req.Env), HomeFiles: files}, nil
	}
	doc := map[string]any{}
	if raw != nil {
		if err := json.Unmarshal(raw, &doc); err != nil {
			return driver.Provision{}, fmt.Errorf("opencode: config %s (a sandboxed runner rewrites it, so it must be plain JSON): %w", path, err)
		}
	}
	env := maps.Clone(req.Env)
	if err := proxyProviders(doc, req.Env, env, req.Proxies); err != nil {
		return driver.Provision{}, err
	}
	if len(doc) > 0 {
		if files[homeConfig], err = json.MarshalIndent(doc, "", "  "); err != nil {
			return driver.Provision{}, fmt.Errorf("opencode: config: %w", err)
		}
	}
	return driver.Provision{Env: env, HomeFiles: files}, nil
}

// builtinProvider is a built-in provider whose key a runner's environment
// may hold: its key variable, upstream and header.
type builtinProvider struct{ keyVar, upstream, header string }

func builtinProviders() map[string]builtinProvider {
	return map[string]builtinProvider{
		"openai":    {"OPENAI_API_KEY", agentproc.OpenAIAPI, "Authorization"},
		"anthropic": {"ANTHROPIC_API_KEY", agentproc.AnthropicAPI + "/v1", "x-api-key"},
	}
}

// proxyProviders points doc's providers at key proxies: keys are read
// from env, and the stand-ins written to out.
func proxyProviders(doc map[string]any, env, out map[string]string, proxies driver.KeyProxies) error {
	builtins := builtinProviders()
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
		base = cmp.Or(base, builtin.upstream)
		key, keyVar := providerKey(opts, env, builtin.keyVar)
		if key == "" || base == "" {
			continue
		}
		url, err := proxies.Behind(base, map[string]string{cmp.Or(builtin.header, "Authorization"): key})
		if err != nil {
			return err
		}
		opts["baseURL"] = url
		if keyVar != "" {
			out[keyVar] = proxies.StandIn()
		} else {
			opts["apiKey"] = proxies.StandIn()
		}
		p["options"] = opts
	}
	return nil
}

// providerKey is a provider's real key: the options' apiKey (a literal,
// or {env:NAME}), else the built-in provider's variable. keyVar names the
// variable it came from; empty for a literal in the file.
func providerKey(opts map[string]any, env map[string]string, builtinVar string) (key, keyVar string) {
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
