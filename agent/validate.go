package agent

import (
	"encoding/json"
	"fmt"
	"slices"
)

// payloadRule is, per kind, the payload fields an event must have and
// those it may have; any other payload is an error.
type payloadRule struct{ required, optional []string }

func rule(k Kind) (payloadRule, bool) {
	switch k {
	case KindSessionStarted:
		return payloadRule{[]string{"session"}, nil}, true
	case KindSessionEnded:
		return payloadRule{[]string{"session"}, []string{"error"}}, true
	case KindTurnStarted:
		return payloadRule{nil, []string{"turn"}}, true
	case KindTurnCompleted:
		return payloadRule{[]string{"turn"}, []string{"usage", "error"}}, true
	case KindItemStarted, KindItemCompleted:
		return payloadRule{[]string{"item"}, nil}, true
	case KindItemDelta:
		return payloadRule{[]string{"delta"}, nil}, true
	case KindApprovalRequested:
		return payloadRule{[]string{"approval"}, nil}, true
	case KindApprovalResolved:
		return payloadRule{[]string{"resolution"}, nil}, true
	case KindUsage:
		return payloadRule{[]string{"usage"}, nil}, true
	case KindError:
		return payloadRule{[]string{"error"}, nil}, true
	case KindNative:
		return payloadRule{}, true
	}
	return payloadRule{}, false
}

// Validate checks that the event follows the model: a known kind, the
// payload that kind carries and no other, and payloads that are whole.
func (e *Event) Validate() error {
	want, ok := rule(e.Kind)
	if !ok {
		return &InvalidEventError{Kind: e.Kind, Reason: "unknown kind"}
	}
	bad := func(format string, args ...any) error {
		return &InvalidEventError{Kind: e.Kind, Reason: fmt.Sprintf(format, args...)}
	}
	for _, p := range e.present() {
		switch {
		case p.set && !slices.Contains(want.required, p.name) && !slices.Contains(want.optional, p.name):
			return bad("carries %s", p.name)
		case !p.set && slices.Contains(want.required, p.name):
			return bad("has no %s", p.name)
		}
	}
	if reason := e.check(); reason != "" {
		return bad("%s", reason)
	}
	if len(e.Raw) > 0 && !json.Valid(e.Raw) {
		return bad("raw is not JSON") // AppendJSON writes it as it is
	}
	if e.Kind == KindNative && len(e.Raw) == 0 {
		return bad("has no raw")
	}
	return nil
}

// present lists the payload fields and whether each is set, in a fixed
// order so an event's first fault is always the one reported.
func (e *Event) present() []struct {
	name string
	set  bool
} {
	return []struct {
		name string
		set  bool
	}{
		{"session", e.Session != nil}, {"turn", e.Turn != nil}, {"item", e.Item != nil}, {"delta", e.Delta != nil},
		{"approval", e.Approval != nil}, {"resolution", e.Resolution != nil}, {"usage", e.Usage != nil}, {"error", e.Error != nil},
	}
}

// check checks the payload's own fields; it returns why not, or "".
func (e *Event) check() string {
	switch e.Kind {
	case KindSessionStarted:
		if e.Session.Agent == "" {
			return "session has no agent"
		}
	case KindSessionEnded:
		if e.Session.Reason == "" {
			return "session has no reason"
		}
	case KindTurnStarted:
		if e.TurnID == "" {
			return "no turn_id"
		}
	case KindTurnCompleted:
		return e.checkTurnEnd()
	case KindItemStarted, KindItemCompleted:
		return e.Item.check(e.Kind == KindItemCompleted)
	case KindItemDelta:
		if e.Delta.ItemID == "" || !slices.Contains([]Field{FieldText, FieldOutput, FieldInput}, e.Delta.Field) {
			return "delta needs an item_id and a known field"
		}
	case KindApprovalRequested:
		return e.Approval.check()
	case KindApprovalResolved:
		return e.Resolution.check()
	case KindError:
		if e.Error.Code == "" || e.Error.Message == "" {
			return "error needs a code and a message"
		}
	}
	return ""
}

func (e *Event) checkTurnEnd() string {
	switch {
	case e.TurnID == "":
		return "no turn_id"
	case !slices.Contains([]TurnStatus{TurnCompleted, TurnInterrupted, TurnFailed}, e.Turn.Status):
		return fmt.Sprintf("turn status %q", e.Turn.Status)
	case e.Turn.Status == TurnFailed && e.Error == nil:
		return "a failed turn says why (error)"
	}
	return ""
}

// check checks an item; done says it must have ended.
func (it *Item) check(done bool) string {
	switch {
	case it.ID == "":
		return "item has no id"
	case !slices.Contains(ItemTypes(), it.Type):
		return fmt.Sprintf("item type %q", it.Type)
	case !slices.Contains([]ItemStatus{ItemInProgress, ItemDone, ItemFailed, ItemDeclined}, it.Status):
		return fmt.Sprintf("item status %q", it.Status)
	case done && it.Status == ItemInProgress:
		return "a completed item is still in progress"
	case !done && it.Status != ItemInProgress:
		return "a started item is not in progress"
	}
	typed := []struct {
		typ ItemType
		set bool
	}{
		{ItemToolCall, it.Tool != nil}, {ItemCommand, it.Command != nil}, {ItemFileChange, it.Changes != nil},
		{ItemPlan, it.Plan != nil}, {ItemQuestion, it.Question != nil},
	}
	for _, f := range typed {
		if f.set && f.typ != it.Type {
			return fmt.Sprintf("a %s item carries %s fields", it.Type, f.typ)
		}
	}
	switch {
	case it.Type == ItemToolCall && (it.Tool == nil || it.Tool.Name == ""):
		return "a tool call names its tool"
	case it.Type == ItemCommand && it.Command == nil:
		return "a command item carries its command"
	case it.Type == ItemQuestion && it.Question == nil:
		return "a question item carries its question"
	}
	return ""
}

func (a *Approval) check() string {
	switch {
	case a.ID == "" || a.Title == "":
		return "approval needs an id and a title"
	case a.Kind != ApprovalTool && a.Kind != ApprovalQuestion:
		return fmt.Sprintf("approval kind %q", a.Kind)
	case a.Kind == ApprovalQuestion && a.Question == nil:
		return "a question approval carries its question"
	case a.Default != "" && a.Default != Allow && a.Default != Deny:
		return fmt.Sprintf("default decision %q", a.Default)
	}
	return ""
}

func (r *Resolution) check() string {
	switch {
	case r.ApprovalID == "":
		return "resolution has no approval_id"
	case r.Decision != Allow && r.Decision != Deny:
		return fmt.Sprintf("decision %q", r.Decision)
	case r.Cause == "":
		return "resolution has no cause"
	case r.Scope != "" && !slices.Contains([]Scope{ScopeOnce, ScopeSession, ScopeAlways}, r.Scope):
		return fmt.Sprintf("scope %q", r.Scope)
	}
	return ""
}

// ParseEvent decodes one event (as a log or an API gives it) and
// validates it. Unknown fields are ignored, so a newer writer's events
// still read.
func ParseEvent(data []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	if err := e.Validate(); err != nil {
		return Event{}, err
	}
	return e, nil
}
