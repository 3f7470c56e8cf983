package acp

import (
	"context"
	"fmt"
	"slices"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
)

// withSettings adds to caps the modes and models a session/new answer
// offered: an ACP agent says them per session, and its sessions are alike.
func withSettings(caps agent.Capabilities, spec Spec, modes *acpsdk.SessionModeState, models *acpsdk.SessionModelState) agent.Capabilities {
	if modes != nil {
		for _, m := range modes.AvailableModes {
			if slices.Contains(spec.WithheldModes, string(m.Id)) {
				continue
			}
			mode := agent.Mode{ID: string(m.Id), Name: m.Name}
			if m.Description != nil {
				mode.Description = *m.Description
			}
			caps.Modes = append(caps.Modes, mode)
		}
	}
	if models != nil && len(models.AvailableModels) > 0 {
		caps.SetModel = true
		for _, m := range models.AvailableModels {
			caps.Models = append(caps.Models, string(m.ModelId))
		}
	}
	return caps
}

// Configure passes a mode or a model on to the agent (session/set_mode,
// session/set_model).
func (s *session) Configure(ctx context.Context, set agent.Settings) error {
	name := s.d.spec.Name
	if err := s.d.Capabilities().CheckSettings(name, set); err != nil {
		return err
	}
	s.mu.Lock()
	id, ended := acpsdk.SessionId(s.native), s.ended
	s.mu.Unlock()
	if ended {
		return agent.ErrSessionEnded
	}
	if set.Mode != "" {
		if err := s.setMode(ctx, id, set.Mode); err != nil {
			return err
		}
	}
	if set.Model != "" {
		if _, err := s.rpc.UnstableSetSessionModel(ctx, acpsdk.UnstableSetSessionModelRequest{SessionId: id, ModelId: acpsdk.UnstableModelId(set.Model)}); err != nil {
			return fmt.Errorf("%s: session/set_model: %w", name, err)
		}
	}
	return nil
}

func (s *session) setMode(ctx context.Context, id acpsdk.SessionId, mode string) error {
	if _, err := s.rpc.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: id, ModeId: acpsdk.SessionModeId(mode)}); err != nil {
		return fmt.Errorf("%s: session/set_mode: %w", s.d.spec.Name, err)
	}
	return nil
}
