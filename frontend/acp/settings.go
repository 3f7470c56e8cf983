package acp

import (
	"context"
	"fmt"
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

// modelConfigID is the id of the session configuration option that
// holds its model.
const modelConfigID = "model"

// configOptions are a session's configuration options: its model, where
// the agent's model can change (the agent's own default, the models its
// capabilities name, and the session's own if it is none of them). ACP's
// stable configuration options carry it, not the unstable model state,
// whose fields the stable schema does not have.
func (f *front) configOptions(caps agent.Capabilities, info sessions.Info) []acpsdk.SessionConfigOption {
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
	opts := make(acpsdk.SessionConfigSelectOptionsUngrouped, 0, len(names))
	for _, n := range names {
		o := acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(n), Name: n}
		if n == defaultModel {
			o.Name, o.Description = "Default", acpsdk.Ptr("the model the agent chooses")
		}
		opts = append(opts, o)
	}
	model := acpsdk.NewSessionConfigOptionSelect(acpsdk.SessionConfigValueId(current), acpsdk.SessionConfigSelectOptions{Ungrouped: &opts})
	model.Select.Id, model.Select.Name = modelConfigID, "Model"
	model.Select.Category = acpsdk.Ptr(acpsdk.SessionConfigOptionCategoryModel)
	return []acpsdk.SessionConfigOption{model}
}

// capsNow are the agent's capabilities as the core has them now: an ACP
// agent's modes and models are learnt from its first session.
func (f *front) capsNow(core Core) agent.Capabilities {
	if caps, ok := core.Agents()[f.cfg.Agent]; ok {
		return caps
	}
	return f.cfg.Capabilities
}

// settings are a session's modes and configuration options, for the
// answer that opens it.
func (f *front) settings(core Core, info sessions.Info) (*acpsdk.SessionModeState, []acpsdk.SessionConfigOption) {
	caps := f.capsNow(core)
	return f.modeState(caps, info), f.configOptions(caps, info)
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
	_, err := f.configured(ctx, id, set)
	return err
}

// configured is configure, with what the session's configuration options
// are after it.
func (f *front) configured(ctx context.Context, id string, set agent.Settings) ([]acpsdk.SessionConfigOption, error) {
	core, info, err := f.session(ctx, id, "", false)
	if err != nil {
		return nil, err
	}
	if info.State == sessions.StateEnded {
		return nil, acpsdk.NewInvalidRequest(map[string]any{"error": "session " + id + " has ended: session/load it first"})
	}
	if info, err = core.Configure(ctx, id, set); err != nil {
		return nil, rpcError(err)
	}
	return f.configOptions(f.capsNow(core), info), nil
}

// SetSessionConfigOption sets the session's model, its one configuration
// option.
func (f *front) SetSessionConfigOption(ctx context.Context, p acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	v := p.ValueId
	switch {
	case v == nil || v.ConfigId != modelConfigID:
		return acpsdk.SetSessionConfigOptionResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no configuration option but %q, which takes a value id", modelConfigID)})
	case v.Value == "" || v.Value == defaultModel:
		return acpsdk.SetSessionConfigOptionResponse{}, acpsdk.NewInvalidParams(map[string]any{
			"error": "the default model is the one a session starts with; name a model to switch to"})
	}
	opts, err := f.configured(ctx, string(v.SessionId), agent.Settings{Model: string(v.Value)})
	if err != nil {
		return acpsdk.SetSessionConfigOptionResponse{}, err
	}
	return acpsdk.SetSessionConfigOptionResponse{ConfigOptions: opts}, nil
}
