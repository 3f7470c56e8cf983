package acp

import (
	"encoding/json"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
)

// approval is one session/request_permission: pending until its first
// resolution, which answer carries to the waiting request.
type approval struct {
	id      string
	item    string
	options []acpsdk.PermissionOption
	first   *agent.Resolution
	answer  chan acpsdk.RequestPermissionResponse
}

// scopesOf are the allow scopes the options offer.
func scopesOf(options []acpsdk.PermissionOption) []agent.Scope {
	var out []agent.Scope
	for _, o := range options {
		switch o.Kind {
		case acpsdk.PermissionOptionKindAllowOnce:
			out = append(out, agent.ScopeOnce)
		case acpsdk.PermissionOptionKindAllowAlways:
			out = append(out, agent.ScopeAlways)
		}
	}
	return out
}

// pick is the option a resolution means: an allow once or always (as its
// scope asks, else the other), a deny once or always. No fitting option,
// or a resolution that is not a person's answer to it, cancels.
func pick(options []acpsdk.PermissionOption, r agent.Resolution) acpsdk.RequestPermissionResponse {
	var want []acpsdk.PermissionOptionKind
	switch {
	case r.Cause == agent.CauseInterrupted || r.Cause == agent.CauseTurnEnded || r.Cause == agent.CauseAgent || r.Cause == agent.CauseRunnerLost:
		return cancelled()
	case r.Decision == agent.Allow && (r.Scope == agent.ScopeAlways || r.Scope == agent.ScopeSession):
		want = []acpsdk.PermissionOptionKind{acpsdk.PermissionOptionKindAllowAlways, acpsdk.PermissionOptionKindAllowOnce}
	case r.Decision == agent.Allow:
		want = []acpsdk.PermissionOptionKind{acpsdk.PermissionOptionKindAllowOnce, acpsdk.PermissionOptionKindAllowAlways}
	case r.Scope == agent.ScopeAlways:
		want = []acpsdk.PermissionOptionKind{acpsdk.PermissionOptionKindRejectAlways, acpsdk.PermissionOptionKindRejectOnce}
	default:
		want = []acpsdk.PermissionOptionKind{acpsdk.PermissionOptionKindRejectOnce, acpsdk.PermissionOptionKindRejectAlways}
	}
	for _, k := range want {
		for _, o := range options {
			if o.Kind == k {
				return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{
					Selected: &acpsdk.RequestPermissionOutcomeSelected{Outcome: "selected", OptionId: o.OptionId}}}
			}
		}
	}
	return cancelled()
}

func cancelled() acpsdk.RequestPermissionResponse {
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{
		Cancelled: &acpsdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}
}

// approvalOf is the canonical approval of a permission request about item.
func approvalOf(id string, it agent.Item, req acpsdk.RequestPermissionRequest) agent.Approval {
	a := agent.Approval{ID: id, Kind: agent.ApprovalTool, ItemID: it.ID, Scopes: scopesOf(req.Options)}
	title := ""
	if req.ToolCall.Title != nil {
		title = *req.ToolCall.Title
	}
	switch {
	case it.Command != nil:
		a.Tool = "shell"
		a.Title = "Shell: " + it.Command.Command
		a.Input, _ = json.Marshal(map[string]string{"command": it.Command.Command})
	case it.Type == agent.ItemFileChange:
		a.Tool = "edit"
		paths := make([]string, 0, len(it.Changes))
		for _, c := range it.Changes {
			paths = append(paths, c.Path)
		}
		a.Title = "Edit: " + strings.Join(paths, ", ")
		if len(paths) == 0 {
			a.Title = "Edit: " + title
		}
		a.Input, _ = json.Marshal(map[string]any{"changes": it.Changes})
	default:
		a.Tool = it.Tool.Name
		a.Title = title
		a.Input = it.Tool.Input
	}
	if a.Title == "" {
		a.Title = a.Tool
	}
	return a
}
