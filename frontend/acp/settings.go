package acp

import (
	"context"
	"slices"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

// defaultModel names the agent's own choice of model, for a session
// started without one.
const defaultModel = "default"

// modeState is a session's modes as ACP has them; nil when its agent has
// one way of working only.
func (f *front) modeState(caps agent.Capabilities, info sessions.Info) *acpsdk.SessionModeState {
	modes := caps.Modes
	if len(modes) == 0 {
		return nil
	}
	st := &acpsdk.SessionModeState{CurrentModeId: acpsdk.SessionModeId(modes[0].ID), AvailableModes: make([]acpsdk.SessionMode, 0, len(modes))}
	if info.Mode != "" {
		st.CurrentModeId = acpsdk.SessionModeId(info.Mode)
	}
	for _, m := range modes {
		sm := acpsdk.SessionMode{Id: acpsdk.SessionModeId(m.ID), Name: m.Name}
		if m.Description != "" {
			sm.Description = acpsdk.Ptr(m.Description)
		}
		st.AvailableModes = append(st.AvailableModes, sm)
	}
	return st
}

// modelState is a session's models as ACP has them: the agent's own
// default, the models its capabilities name, and the session's own if
// it is none of them; nil when the model cannot be changed.
func (f *front) modelState(caps agent.Capabilities, info sessions.Info) *acpsdk.SessionModelState {
	if !caps.SetModel {
		return nil
	}
	names := append([]string{defaultModel}, caps.Models...)
	current := info.Model
	if current == "" {
		current = defaultModel
	}
	if !slices.Contains(names, current) {
		names = append(names, current)
	}
	st := &acpsdk.SessionModelState{CurrentModelId: acpsdk.ModelId(current), AvailableModels: make([]acpsdk.ModelInfo, 0, len(names))}
	for _, n := range names {
		mi := acpsdk.ModelInfo{ModelId: acpsdk.ModelId(n), Name: n}
		if n == defaultModel {
			mi.Name, mi.Description = "Default", acpsdk.Ptr("the model the agent chooses")
		}
		st.AvailableModels = append(st.AvailableModels, mi)
	}
	return st
}

// capsNow are the agent's capabilities as the core has them now: an ACP
// agent's modes and models are learnt from its first session.
func (f *front) capsNow(core Core) agent.Capabilities {
	if caps, ok := core.Agents()[f.cfg.Agent]; ok {
		return caps
	}
	return f.cfg.Capabilities
}

// settings are a session's modes and models, for the answer that opens it.
func (f *front) settings(core Core, info sessions.Info) (*acpsdk.SessionModeState, *acpsdk.SessionModelState) {
	caps := f.capsNow(core)
	return f.modeState(caps, info), f.modelState(caps, info)
}

// SetSessionMode switches a live session's mode.
func (f *front) SetSessionMode(ctx context.Context, p acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	if p.ModeId == "" {
		return acpsdk.SetSessionModeResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": "modeId is empty"})
	}
	return acpsdk.SetSessionModeResponse{}, f.configure(ctx, string(p.SessionId), agent.Settings{Mode: string(p.ModeId)})
}

// UnstableSetSessionModel switches a live session's model (ACP's
// session/set_model, not yet part of the stable protocol).
func (f *front) UnstableSetSessionModel(ctx context.Context, p acpsdk.UnstableSetSessionModelRequest) (acpsdk.UnstableSetSessionModelResponse, error) {
	switch p.ModelId {
	case "":
		return acpsdk.UnstableSetSessionModelResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": "modelId is empty"})
	case defaultModel:
		return acpsdk.UnstableSetSessionModelResponse{}, acpsdk.NewInvalidParams(map[string]any{
			"error": "the default model is the one a session starts with; name a model to switch to"})
	}
	return acpsdk.UnstableSetSessionModelResponse{}, f.configure(ctx, string(p.SessionId), agent.Settings{Model: string(p.ModelId)})
}

func (f *front) configure(ctx context.Context, id string, set agent.Settings) error {
	core, info, err := f.session(ctx, id, "", false)
	if err != nil {
		return err
	}
	if info.State == sessions.StateEnded {
		return acpsdk.NewInvalidRequest(map[string]any{"error": "session " + id + " has ended: session/load it first"})
	}
	if _, err := core.Configure(ctx, id, set); err != nil {
		return rpcError(err)
	}
	return nil
}
