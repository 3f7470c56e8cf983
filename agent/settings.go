package agent

import (
	"context"
	"fmt"
	"strconv"
)

// Mode is a way of working an agent offers: asking before edits, planning
// without changing anything, and so on. A session starts in its agent's
// first mode unless it asks for another (StartRequest.Mode).
type Mode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Settings are what a client may change in a running session, between
// turns or during one (the change applies from the agent's next request
// to its model). Empty fields are left as they are.
type Settings struct {
	// Mode is one of Capabilities.Modes, by id.
	Mode string `json:"mode,omitempty"`
	// Model is a model the agent's provider serves; Capabilities.Models
	// names some, and any other the agent takes may be given.
	Model string `json:"model,omitempty"`
}

// Configurable is a session whose mode or model a client may change
// (Capabilities.Modes, Capabilities.SetModel).
type Configurable interface {
	Configure(ctx context.Context, s Settings) error
}

// CheckSettings refuses, with an *UnsupportedError or an
// *InvalidSettingsError, settings the capabilities of agent kind name do
// not allow.
func (c Capabilities) CheckSettings(name string, s Settings) error {
	if s.Mode != "" {
		if len(c.Modes) == 0 {
			return &UnsupportedError{Agent: name, Capability: "change modes"}
		}
		if !c.HasMode(s.Mode) {
			return &InvalidSettingsError{Agent: name, Reason: "no mode " + strconv.Quote(s.Mode) + modeList(c.Modes)}
		}
	}
	if s.Model != "" && !c.SetModel {
		return &UnsupportedError{Agent: name, Capability: "change models"}
	}
	return nil
}

// HasMode says whether id is one of the modes.
func (c Capabilities) HasMode(id string) bool {
	for _, m := range c.Modes {
		if m.ID == id {
			return true
		}
	}
	return false
}

func modeList(modes []Mode) string {
	s := " (its modes:"
	for i, m := range modes {
		if i > 0 {
			s += ","
		}
		s += " " + m.ID
	}
	return s + ")"
}

// InvalidSettingsError refuses settings the agent does not know (a mode
// it lacks).
type InvalidSettingsError struct {
	Agent  string
	Reason string
}

func (e *InvalidSettingsError) Error() string {
	return fmt.Sprintf("agent: %s: %s", e.Agent, e.Reason)
}

func (e *InvalidSettingsError) Is(target error) bool { return target == ErrInvalidSettings }
