package mock

import (
	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
)

func init() { driver.Register(registration()) }

// registration is the mock as the registry knows it: built into tether,
// always offered, last in the default order.
func registration() driver.Kind {
	return driver.Kind{
		Name: "mock", Title: "the mock agent",
		About: "a scripted agent built into tether: no CLI, model or key; the words REQUEST_APPROVAL, " +
			"ASK_QUESTION, FAIL_TURN and SLOW in the prompt make it ask an approval, ask a question, fail " +
			"the turn, or wait for Ctrl-C; it appends a line to mock-notes.md in the working directory",
		Order: 90, CheckpointSDK: "mock", ResumeOptions: ResumeOptions,
		New: func(cfg driver.Config) (agent.Driver, error) { return New(Config{Now: cfg.Now}), nil },
	}
}
