package claudecli

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/internal/agentproc"
)

// kindName is Claude Code's agent kind.
const kindName = "claude"

func init() { driver.Register(registration()) }

// registration is Claude Code as the registry knows it. It checks no CLI
// version of its own: the SDK warns below claude.MinimumCLIVersion.
func registration() driver.Kind {
	return driver.Kind{
		Name: kindName, Title: "Claude Code", About: "Claude Code's CLI",
		Order: 20, MastType: "claude-code", CheckpointSDK: "claude",
		CLI: "claude", FindCLI: findCLI,
		EnvPrefixes: []string{"ANTHROPIC_", "CLAUDE_CODE_", "DISABLE_", "MCP_"},
		Provider:    provide,
		New:         newDriver,
	}
}

// findCLI is the CLI at path, else claude on PATH or where Claude Code
// installs itself (claude.FindCLI).
func findCLI(path string, env []string) (string, error) {
	if path != "" {
		return driver.LookPath(kindName, path, env)
	}
	p, err := claude.FindCLI("")
	var missing *claude.CLINotFoundError
	if errors.As(err, &missing) {
		err = fmt.Errorf("looked in %s", strings.Join(missing.Searched, ", "))
	}
	if err != nil {
		return "", &driver.CLINotFoundError{Kind: kindName, CLI: "claude", Err: err}
	}
	return p, nil
}

// newDriver is New from the registry's common configuration.
func newDriver(cfg driver.Config) (agent.Driver, error) {
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	c := Config{CLIPath: cfg.CLIPath, Env: agentproc.EnvMap(env), InitializeTimeout: cfg.InitializeTimeout,
		ShutdownGrace: cfg.ShutdownGrace, Logger: cfg.Logger, Now: cfg.Now}
	if p := cfg.Sandbox; p != nil {
		c.Sandbox = &SandboxConfig{Hide: p.Hide, ReadOnly: p.ReadOnly, AllowToolNetwork: p.ToolNetwork}
	}
	d, err := New(c)
	if err != nil {
		return nil, err // not a nil *Driver in an interface
	}
	return d, nil
}

// provide hands Claude Code the Anthropic settings of the runner's
// environment; with key proxies, its key and auth token reach the API
// through one.
func provide(req driver.ProviderRequest) (driver.Provision, error) {
	creds := map[string]string{}
	if k := req.Env["ANTHROPIC_API_KEY"]; k != "" {
		creds["x-api-key"] = k
	}
	if k := req.Env["ANTHROPIC_AUTH_TOKEN"]; k != "" {
		creds["Authorization"] = k
	}
	env := maps.Clone(req.Env)
	if req.Proxies == nil || len(creds) == 0 {
		return driver.Provision{Env: env}, nil
	}
	url, err := req.Proxies.Behind(cmp.Or(req.Env["ANTHROPIC_BASE_URL"], agentproc.AnthropicAPI), creds)
	if err != nil {
		return driver.Provision{}, err
	}
	env["ANTHROPIC_BASE_URL"] = url
	for name, header := range map[string]string{"ANTHROPIC_API_KEY": "x-api-key", "ANTHROPIC_AUTH_TOKEN": "Authorization"} {
		if _, ok := creds[header]; ok {
			env[name] = req.Proxies.StandIn()
		}
	}
	return driver.Provision{Env: env}, nil
}
