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
	"github.com/tetherhq/tether/driver/codex"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/driver/opencode"
	"github.com/tetherhq/tether/sandbox"
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
	drivers = map[string]agent.Driver{"claude": claude, "mock": mock.New(mock.Config{})}
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

// optionalDriver is the driver of kind with its CLI at path, under the
// runner's policy: its slice of the environment, the runner's provider
// configuration in each session's home (keys behind proxies when
// sandboxed), the sandbox, and the turn timeout.
func optionalDriver(kind, path string, cfg Config, proxies *keyProxies, log *slog.Logger) (agent.Driver, error) {
	env := agentEnv(kind, os.Environ(), cfg.AgentEnv)
	var policy *sandbox.Policy
	if cfg.Sandbox {
		policy = &sandbox.Policy{Hide: []string{cfg.WorkspaceRoot, cfg.DataDir}, ReadOnly: cfg.SandboxReadOnly, ToolNetwork: cfg.AllowToolNetwork}
	}
	log = log.With("agent", kind)
	switch kind {
	case "codex":
		p, err := codexProvider(env, os.Getenv, proxies)
		if err != nil {
			return nil, err
		}
		d, err := codex.New(codex.Config{CLIPath: path, Env: envList(p.env), HomeFiles: p.homeFiles, Sandbox: policy,
			AllowUntestedVersion: cfg.AllowUntestedAgents, TurnTimeout: cfg.TurnTimeout, Logger: log})
		if err != nil {
			return nil, err // not a nil *codex.Driver in an interface
		}
		return d, nil
	case "opencode":
		p, err := openCodeProvider(env, os.Getenv, proxies)
		if err != nil {
			return nil, err
		}
		d, err := opencode.New(opencode.Config{CLIPath: path, Env: envList(p.env), HomeFiles: p.homeFiles, Sandbox: policy,
			AllowUntestedVersion: cfg.AllowUntestedAgents, TurnTimeout: cfg.TurnTimeout, Logger: log})
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	return nil, fmt.Errorf("server: no driver for %s", kind)
}

// envList is env as NAME=value entries, sorted.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
