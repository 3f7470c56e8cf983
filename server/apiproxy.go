package server

import (
	"log/slog"

	"github.com/tetherhq/tether/runner/keyproxy"
)

// defaultAPI is where the model API is when ANTHROPIC_BASE_URL is unset.
const defaultAPI = "https://api.anthropic.com"

// apiProxy is the key proxy a sandboxed runner puts between its agents and
// the model API; nil when there is none (Close is then a no-op).
type apiProxy struct{ p *keyproxy.Proxy }

func (a *apiProxy) Close() {
	if a != nil {
		_ = a.p.Close()
	}
}

// secretsBehindProxy keeps the API key out of sandboxed agents: a tool
// command can read its agent's environment (/proc/PID/environ), so with the
// sandbox on the agents get the proxy's address and a stand-in key, and
// only the proxy holds the real one. Without the sandbox, or without a key
// to protect, env is returned as it is.
func secretsBehindProxy(cfg Config, env map[string]string, log *slog.Logger) (map[string]string, *apiProxy, error) {
	creds := map[string]string{}
	if k := env["ANTHROPIC_API_KEY"]; k != "" {
		creds["x-api-key"] = k
	}
	if k := env["ANTHROPIC_AUTH_TOKEN"]; k != "" {
		creds["Authorization"] = k
	}
	if !cfg.Sandbox || len(creds) == 0 {
		return env, nil, nil
	}
	upstream := env["ANTHROPIC_BASE_URL"]
	if upstream == "" {
		upstream = defaultAPI
	}
	p, err := keyproxy.Start(keyproxy.Config{Upstream: upstream, Credentials: creds, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = v
	}
	out["ANTHROPIC_BASE_URL"] = p.URL()
	if _, ok := creds["x-api-key"]; ok {
		out["ANTHROPIC_API_KEY"] = p.Token()
	}
	if _, ok := creds["Authorization"]; ok {
		out["ANTHROPIC_AUTH_TOKEN"] = p.Token()
	}
	log.Info("API key kept behind a loopback proxy", "proxy", p.URL(), "upstream", upstream)
	return out, &apiProxy{p: p}, nil
}
