package codex

import (
	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
)

func init() { driver.Register(registration()) }

// registration is Codex as the registry knows it.
func registration() driver.Kind {
	return driver.Kind{
		Name: Name, Title: "Codex", About: "the Codex CLI over codex app-server",
		Order: 30, CheckpointSDK: "openai",
		CLI: "codex", TestedVersion: TestedVersion,
		EnvPrefixes: []string{"OPENAI_"},
		Provider:    provide,
		New: func(cfg driver.Config) (agent.Driver, error) {
			d, err := New(cfg)
			if err != nil {
				return nil, err // not a nil *Driver in an interface
			}
			return d, nil
		},
	}
}
