package server

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/claudecli"
)

// agentKinds are the agent kinds whose CLI a runner can be given
// (--cli NAME=PATH); the mock needs none and is always offered.
func agentKinds() []string { return []string{"claude", "codex", "opencode"} }

// ParseCLIFlag reads one --cli value: NAME=PATH names an agent kind's CLI,
// a bare PATH is Claude Code's (as before there were other kinds).
func ParseCLIFlag(value string) (kind, path string) {
	if name, p, ok := strings.Cut(value, "="); ok && name != "" && !strings.ContainsRune(name, '/') {
		return name, p
	}
	return "claude", value
}

// checkCLIs refuses CLIs of kinds the runner does not know and a Claude
// CLI given twice, and moves Claude's into CLIPath.
func (cfg *Config) checkCLIs() error {
	for kind, path := range cfg.CLIs {
		if !slices.Contains(agentKinds(), kind) {
			return &ConfigError{Field: "CLIs", Reason: fmt.Sprintf("no agent kind %q (--cli takes NAME=PATH with NAME one of %s, or the claude PATH alone)",
				kind, strings.Join(agentKinds(), ", "))}
		}
		if path == "" {
			return &ConfigError{Field: "CLIs", Reason: fmt.Sprintf("an empty path for %s", kind)}
		}
	}
	if p, ok := cfg.CLIs["claude"]; ok {
		if cfg.CLIPath != "" && cfg.CLIPath != p {
			return &ConfigError{Field: "CLIs", Reason: "two claude CLIs given"}
		}
		cfg.CLIPath = p
	}
	return nil
}

// cliFor is the CLI of kind: the configured one (explicit is true), else
// the name looked up on PATH.
func (cfg Config) cliFor(kind string) (path string, explicit bool) {
	if p, ok := cfg.CLIs[kind]; ok {
		return p, true
	}
	return kind, false
}

// canonicalDrivers are the agents the sessions API offers: Claude Code
// under the runner's policy (the driver protocol v1 uses), and each other
// kind whose CLI was given or is found on PATH. A kind given with --cli
// that cannot be used stops the runner with the reason; one merely not
// found is left out, and unavailable says why.
func canonicalDrivers(cfg Config, claude *claudecli.Driver, proxies *keyProxies, log *slog.Logger) (drivers map[string]agent.Driver, unavailable map[string]string, err error) {
	drivers = map[string]agent.Driver{"claude": claude.Canonical(nil)}
	unavailable = map[string]string{}
	for _, kind := range []string{"codex", "opencode"} {
		path, explicit := cfg.cliFor(kind)
		if !explicit {
			if _, err := exec.LookPath(path); err != nil {
				unavailable[kind] = fmt.Sprintf("no %s on PATH (tether serve --cli %s=PATH)", kind, kind)
				continue
			}
		}
		d, err := optionalDriver(kind, path, cfg, proxies, log)
		if err != nil {
			if explicit {
				return nil, nil, err
			}
			unavailable[kind] = err.Error()
			log.Warn("agent not offered", "agent", kind, "err", err)
			continue
		}
		drivers[kind] = d
	}
	log.Info("agents offered", "agents", slices.Sorted(maps.Keys(drivers)))
	return drivers, unavailable, nil
}

// runnerGetenv is the runner's own environment, where agents' provider
// configuration is found.
func runnerGetenv(name string) string { return os.Getenv(name) }

// optionalDriver is the driver of kind with its CLI at path.
func optionalDriver(kind, path string, cfg Config, proxies *keyProxies, log *slog.Logger) (agent.Driver, error) {
	return nil, fmt.Errorf("%s: this runner has no driver for it yet", kind)
}
