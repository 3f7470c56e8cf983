package server

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	_ "github.com/tetherhq/tether/driver/all" // every agent kind
	"github.com/tetherhq/tether/sandbox"
)

// claudeKind is the kind of Config.CLIPath and of a bare --cli PATH:
// Claude Code's, from before runners had other agents.
const claudeKind = "claude"

// ParseCLIFlag reads one --cli value: NAME=PATH names an agent kind's CLI,
// a bare PATH is Claude Code's.
func ParseCLIFlag(value string) (kind, path string) {
	if name, p, ok := strings.Cut(value, "="); ok && name != "" && !strings.ContainsRune(name, '/') {
		return name, p
	}
	return claudeKind, value
}

// CLIKinds are the agent kinds whose CLI a runner can be given (--cli
// NAME=PATH), in the default order; the others are built in.
func CLIKinds() []string {
	var names []string
	for _, k := range driver.Kinds() {
		if !k.Builtin() {
			names = append(names, k.Name)
		}
	}
	return names
}

// checkCLIs refuses CLIs of kinds the runner does not know (or that need
// none) and a Claude CLI given twice, and moves Claude's into CLIPath.
func (cfg *Config) checkCLIs() error {
	for kind, path := range cfg.CLIs {
		if !slices.Contains(CLIKinds(), kind) {
			return &ConfigError{Field: "CLIs", Reason: fmt.Sprintf("no agent kind %q with a CLI (--cli takes NAME=PATH with NAME one of %s, or the %s PATH alone)",
				kind, strings.Join(CLIKinds(), ", "), claudeKind)}
		}
		if path == "" {
			return &ConfigError{Field: "CLIs", Reason: fmt.Sprintf("an empty path for %s", kind)}
		}
	}
	if p, ok := cfg.CLIs[claudeKind]; ok {
		if cfg.CLIPath != "" && cfg.CLIPath != p {
			return &ConfigError{Field: "CLIs", Reason: "two claude CLIs given"}
		}
		cfg.CLIPath = p
	}
	return nil
}

// cliFor is the CLI the configuration names for kind (explicit is true),
// or "" to look it up.
func (cfg Config) cliFor(kind string) (path string, explicit bool) {
	if p, ok := cfg.CLIs[kind]; ok {
		return p, true
	}
	if kind == claudeKind && cfg.CLIPath != "" {
		return cfg.CLIPath, true
	}
	return "", false
}

// agents are what a runner offers: a driver per kind it has, the CLI
// each runs (AgentHealth watches them), and why each other kind of the
// registry is not offered.
type agents struct {
	drivers     map[string]agent.Driver
	clis        map[string]string
	unavailable map[string]string
}

// offerAgents makes the driver of every registered kind under the
// runner's policy. A kind whose CLI is not found, or cannot be used, is
// left out, and unavailable says why; a CLI named in the configuration
// that cannot be used, and a sandbox this machine cannot make, stop the
// runner with the reason. The log says which agents are offered, and
// which not and why.
func offerAgents(cfg Config, proxies *keyProxies, log *slog.Logger) (agents, error) {
	a := agents{drivers: map[string]agent.Driver{}, clis: map[string]string{}, unavailable: map[string]string{}}
	var offered []string
	for _, k := range driver.Kinds() {
		path, explicit := cfg.cliFor(k.Name)
		d, cli, err := newAgent(k, path, cfg, proxies, log)
		switch {
		case err == nil:
			offered = append(offered, k.Name)
			a.drivers[k.Name] = d
			if cli != "" {
				a.clis[k.Name] = cli
			}
		case explicit || errors.Is(err, sandbox.ErrUnavailable):
			return agents{}, err
		case errors.Is(err, driver.ErrCLINotFound):
			a.unavailable[k.Name] = fmt.Sprintf("%v (give its path with --cli %s=PATH)", err, k.Name)
			log.Info("agent not offered", "agent", k.Name, "reason", a.unavailable[k.Name])
		default: // a CLI that is there but cannot be used
			a.unavailable[k.Name] = err.Error()
			log.Warn("agent not offered", "agent", k.Name, "reason", a.unavailable[k.Name])
		}
	}
	log.Info("agents offered", "agents", offered)
	return a, nil
}

// newAgent makes kind k's driver, its CLI at path (looked up when empty),
// under the runner's policy: its slice of the environment, the runner's
// provider configuration (keys behind proxies when sandboxed), the
// sandbox and the limits. cli is the CLI it runs, "" for a built-in kind.
func newAgent(k driver.Kind, path string, cfg Config, proxies *keyProxies, log *slog.Logger) (d agent.Driver, cli string, err error) {
	env := k.Environ(os.Environ(), cfg.AgentEnv)
	if cli, err = k.Find(path, envList(env)); err != nil {
		return nil, "", err
	}
	req := driver.ProviderRequest{Env: env, Getenv: os.Getenv}
	if cfg.Sandbox {
		req.Proxies = proxies
	}
	p, err := k.Provide(req)
	if err != nil {
		return nil, "", err
	}
	dc := driver.Config{CLIPath: cli, Env: envList(p.Env), HomeFiles: p.HomeFiles,
		AllowUntestedVersion: cfg.AllowUntestedAgents, TurnTimeout: cfg.TurnTimeout,
		InitializeTimeout: cfg.InitializeTimeout, Logger: log.With("agent", k.Name)}
	if cfg.Sandbox {
		dc.Sandbox = sandboxPolicy(cfg)
	}
	if d, err = k.New(dc); err != nil {
		if errors.Is(err, driver.ErrUntestedVersion) {
			err = fmt.Errorf("%w; --allow-untested-agents runs it anyway", err)
		}
		return nil, "", err
	}
	return d, cli, nil
}

// sandboxPolicy is the runner's part of every agent's sandbox: the
// workspaces root and the data directory hidden (a session's own
// workspace and home are mounted back), the operator's read-only paths,
// and whether sessions may ask for network in their commands.
func sandboxPolicy(cfg Config) *sandbox.Policy {
	hide := []string{cfg.WorkspaceRoot, cfg.DataDir}
	if cfg.HomesRoot != "" && !within(cfg.HomesRoot, cfg.DataDir) && !within(cfg.HomesRoot, cfg.WorkspaceRoot) {
		hide = append(hide, cfg.HomesRoot) // homes on storage of their own (--homes)
	}
	return &sandbox.Policy{Hide: hide, ReadOnly: cfg.SandboxReadOnly, ToolNetwork: cfg.AllowToolNetwork}
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
