package opencode

import (
	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
)

func init() { driver.Register(registration()) }

// registration is OpenCode as the registry knows it.
func registration() driver.Kind {
	return driver.Kind{
		Name: agentName, Title: "OpenCode", About: "OpenCode over opencode serve",
		Order: 10, CheckpointSDK: "openai",
		CLI: agentName, TestedVersion: TestedVersion,
		// npm_config_*: the operator's npm registry settings, which OpenCode
		// fetches provider packages with.
		EnvPrefixes: []string{"OPENAI_", "ANTHROPIC_", "OPENCODE_DISABLE_", "OPENCODE_EXPERIMENTAL", "OPENCODE_PURE",
			"npm_config_", "NPM_CONFIG_"},
		Provider: provide,
		New: func(cfg driver.Config) (agent.Driver, error) {
			d, err := New(cfg)
			if err != nil {
				return nil, err // not a nil *Driver in an interface
			}
			return d, nil
		},
	}
}
