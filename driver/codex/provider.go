package codex

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"

	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/internal/agentproc"
)

// homeConfig is where a session's home holds Codex's configuration.
const homeConfig = ".codex/config.toml"

// provide hands Codex the runner's own Codex configuration: its
// config.toml, found as Codex finds it ($CODEX_HOME, else ~/.codex), is
// written to .codex/config.toml of each session's home. With key proxies,
// each provider whose key the runner holds (the built-in OpenAI one
// through OPENAI_BASE_URL) is reached through one: the config names the
// proxy and the key's variable holds the stand-in.
func provide(req driver.ProviderRequest) (driver.Provision, error) {
	dir := cmp.Or(req.Getenv("CODEX_HOME"), filepath.Join(req.Getenv("HOME"), ".codex"))
	path := filepath.Join(dir, "config.toml")
	raw, err := agentproc.ReadOptional(path)
	if err != nil {
		return driver.Provision{}, fmt.Errorf("codex: %w", err)
	}
	files := map[string][]byte{}
	if req.Proxies == nil {
		if raw != nil {
			files[homeConfig] = raw
		}
		return driver.Provision{Env: maps.Clone(req.Env), HomeFiles: files}, nil
	}
	doc := map[string]any{}
	if err := toml.Unmarshal(raw, &doc); err != nil {
		return driver.Provision{}, fmt.Errorf("codex: config %s: %w", path, err)
	}
	env := maps.Clone(req.Env)
	hidden, err := proxyProviders(doc, req.Env, req.Proxies)
	if err != nil {
		return driver.Provision{}, err
	}
	if key := req.Env["OPENAI_API_KEY"]; key != "" {
		url, err := req.Proxies.Behind(cmp.Or(req.Env["OPENAI_BASE_URL"], agentproc.OpenAIAPI), map[string]string{"Authorization": key})
		if err != nil {
			return driver.Provision{}, err
		}
		env["OPENAI_BASE_URL"] = url
		hidden["OPENAI_API_KEY"] = true
	}
	for name := range hidden {
		env[name] = req.Proxies.StandIn()
	}
	if len(doc) > 0 {
		if files[homeConfig], err = toml.Marshal(doc); err != nil {
			return driver.Provision{}, fmt.Errorf("codex: config: %w", err)
		}
	}
	return driver.Provision{Env: env, HomeFiles: files}, nil
}

// proxyProviders points the config's model providers at key proxies: a
// bearer token written in the file is replaced by the stand-in; hidden
// are the variables (the providers' env_key) whose real key a proxy now
// holds.
func proxyProviders(doc map[string]any, env map[string]string, proxies driver.KeyProxies) (hidden map[string]bool, err error) {
	hidden = map[string]bool{}
	providers, _ := doc["model_providers"].(map[string]any)
	for _, p := range providers {
		p, _ := p.(map[string]any)
		base, _ := p["base_url"].(string)
		if base == "" {
			continue
		}
		if token, _ := p["experimental_bearer_token"].(string); token != "" {
			if p["base_url"], err = proxies.Behind(base, map[string]string{"Authorization": token}); err != nil {
				return nil, err
			}
			p["experimental_bearer_token"] = proxies.StandIn()
			continue
		}
		keyVar, _ := p["env_key"].(string)
		if key := env[keyVar]; key != "" {
			if p["base_url"], err = proxies.Behind(base, map[string]string{"Authorization": key}); err != nil {
				return nil, err
			}
			hidden[keyVar] = true
		}
	}
	return hidden, nil
}
