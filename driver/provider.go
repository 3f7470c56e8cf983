package driver

import (
	"maps"
	"strings"
)

// KeyProxies keep model API keys out of a sandboxed agent's reach: a tool
// command can read its agent's environment and configuration files, so
// the agent is given a loopback proxy's address and a stand-in key, and
// only the proxy holds the real one. The runner implements it.
type KeyProxies interface {
	// Behind is the base URL that reaches upstream with creds (request
	// header → real value) added to each request.
	Behind(upstream string, creds map[string]string) (string, error)
	// StandIn is the key the agent sends instead of the real ones; every
	// proxy takes it.
	StandIn() string
}

// ProviderRequest is what a kind's provider wiring reads of the runner.
type ProviderRequest struct {
	// Env is the kind's slice of the runner's environment (Kind.Environ).
	Env map[string]string
	// Getenv reads the runner's whole environment: where its own
	// configuration files are (HOME, CODEX_HOME, XDG_CONFIG_HOME).
	Getenv func(string) string
	// Proxies, set when the runner sandboxes its agents, keep the keys:
	// the agent gets the proxies' addresses and the stand-in key instead.
	Proxies KeyProxies
}

// Provision is what the agent is handed of the runner's configuration.
type Provision struct {
	// Env is the CLI's whole environment.
	Env map[string]string
	// HomeFiles are written into each session's home (Config.HomeFiles).
	HomeFiles map[string][]byte
}

// Provide is the kind's provision (Kind.Provider), or req.Env as it is
// for a kind without provider wiring.
func (k Kind) Provide(req ProviderRequest) (Provision, error) {
	if k.Provider == nil {
		return Provision{Env: maps.Clone(req.Env)}, nil
	}
	return k.Provider(req)
}

// Environ picks what agents of the kind may see of environ (NAME=value
// entries): the variables with the kind's prefixes, the locale, PATH and
// the names in extra — never the runner's tokens nor another agent's keys.
func (k Kind) Environ(environ []string, extra []string) map[string]string {
	keep := map[string]bool{"PATH": true, "LANG": true, "LC_ALL": true, "TZ": true}
	for _, name := range extra {
		keep[name] = true
	}
	env := map[string]string{}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if keep[name] || k.hasPrefix(name) {
			env[name] = value
		}
	}
	return env
}

func (k Kind) hasPrefix(name string) bool {
	for _, p := range k.EnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
