// Package opencodeacp registers OpenCode over ACP (`opencode acp`) as the
// agent kind "opencode-acp", run by the ACP driver (package driver/acp):
// the same OpenCode as the kind "opencode", reached through the protocol
// any ACP agent speaks, so the two can be held against each other. Its
// configuration and keys are provided as the kind "opencode" provides
// them.
package opencodeacp

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/acp"
	"github.com/tetherhq/tether/driver/internal/agentproc"
)

// Name is the agent kind.
const Name = "opencode-acp"

// TestedVersion is the OpenCode release the kind is tested against.
const TestedVersion = "1.18.33"

func init() { driver.Register(Kind()) }

// Kind is `opencode acp` as the registry knows it.
func Kind() driver.Kind {
	return driver.Kind{
		Name: Name, Title: "OpenCode (ACP)", About: "OpenCode over ACP (opencode acp)",
		Order: 50, CheckpointSDK: "openai",
		CLI: "opencode", TestedVersion: TestedVersion,
		EnvPrefixes: []string{"OPENAI_", "ANTHROPIC_", "OPENCODE_DISABLE_", "OPENCODE_EXPERIMENTAL", "OPENCODE_PURE",
			"npm_config_", "NPM_CONFIG_"},
		Provider: provide,
		New:      acp.Maker(Spec()),
	}
}

// Spec is how the ACP driver runs `opencode acp`.
func Spec() acp.Spec {
	return acp.Spec{Name: Name, CLI: "opencode", Args: []string{"acp"}, TestedVersion: TestedVersion,
		FileSystem: true, Images: true, Environ: environ, MCP: []agent.MCPTransport{agent.MCPStdio, agent.MCPHTTP, agent.MCPSSE}}
}

// provide is the kind "opencode"'s provider, when it is registered.
func provide(req driver.ProviderRequest) (driver.Provision, error) {
	k, ok := driver.Lookup("opencode")
	if !ok {
		return driver.Kind{}.Provide(req)
	}
	return k.Provide(req)
}

// environ puts OpenCode's XDG directories inside the session's home, where
// its configuration was written.
func environ(env []string, home string) ([]string, error) {
	if home == "" {
		return env, nil
	}
	dirs := map[string]string{
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
	}
	for name, dir := range dirs {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("home: %w", err)
		}
		env = agentproc.SetEnv(env, name, dir)
	}
	return env, nil
}
