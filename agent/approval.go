package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// ApprovalKind says what an approval decides.
type ApprovalKind string

const (
	ApprovalTool     ApprovalKind = "tool"     // may this tool call run?
	ApprovalQuestion ApprovalKind = "question" // which option does the user choose?
)

// Scope is how far an allow reaches. A deny may take ScopeSession too: the
// session core then denies every later call of the same tool in the
// session without asking (a rule it keeps, whatever the agent).
type Scope string

const (
	ScopeOnce    Scope = "once"    // this call only
	ScopeSession Scope = "session" // this and like calls for the rest of the session
	ScopeAlways  Scope = "always"  // a rule the agent keeps beyond the session
)

// Approval is a pending decision about a tool use (or a question's answer).
// It is an object of its own, not a callback: it can be listed, outlives a
// client's connection, and is answered by a Resolution.
type Approval struct {
	ID        string       `json:"id"`
	Kind      ApprovalKind `json:"kind"`
	SessionID string       `json:"session_id,omitempty"`
	Agent     string       `json:"agent,omitempty"`
	TurnID    string       `json:"turn_id,omitempty"`
	// ItemID is the item (tool call, command, file change, question) the
	// decision is about.
	ItemID string `json:"item_id,omitempty"`
	// Tool and Input are what would run, as the model asked for it.
	Tool  string          `json:"tool,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// Title is one line for a person: "Bash: rm -rf build".
	Title string `json:"title"`
	// Question is set for question approvals.
	Question *Question `json:"question,omitempty"`
	// Scopes are the scopes an allow may take for this agent; empty means
	// once only.
	Scopes  []Scope   `json:"scopes,omitempty"`
	Created time.Time `json:"created"`
	// Expires is when the default decision applies; zero means never.
	Expires time.Time `json:"expires,omitzero"`
	// Default is the decision taken at expiry.
	Default Decision `json:"default,omitempty"`
}

// Decision is an answer to an approval.
type Decision string

const (
	Allow Decision = "allow"
	Deny  Decision = "deny"
)

// Cause says where a resolution came from.
type Cause string

const (
	CauseClient      Cause = "client"      // a person or program answered
	CauseExpired     Cause = "expired"     // the default decision applied at expiry
	CauseInterrupted Cause = "interrupted" // the turn was interrupted first
	CauseTurnEnded   Cause = "turn_ended"  // the turn or session ended first
	CauseAgent       Cause = "agent"       // the agent withdrew or settled it itself
	CauseRunnerLost  Cause = "runner_lost" // the session's runner left the fleet without a word
	CauseRule        Cause = "rule"        // a deny for the session, given earlier, answered it
)

// Resolution answers an approval. The first resolution of an approval
// wins; later ones are refused with the first (see AlreadyResolvedError).
type Resolution struct {
	ApprovalID string   `json:"approval_id"`
	Decision   Decision `json:"decision"`
	Scope      Scope    `json:"scope,omitempty"`
	// Reason is told to the agent (and the model) with a deny.
	Reason string `json:"reason,omitempty"`
	// Answers are the chosen option ids of a question.
	Answers []string `json:"answers,omitempty"`
	// Input, with an allow, is the tool input the call runs with in
	// place of the one asked (a person's edit of Approval.Input): a JSON
	// object. Only agents with Capabilities.EditInput take it.
	Input json.RawMessage `json:"input,omitempty"`
	// By names who resolved it (a token's name, a user), for the audit.
	By    string    `json:"by,omitempty"`
	Cause Cause     `json:"cause"`
	At    time.Time `json:"at"`
}

// CheckAnswers refuses, with a *BadAnswerError, a client's allow of a
// question approval whose answers are not ids of its options, or are
// several where the question takes one. Other resolutions pass.
func (a Approval) CheckAnswers(r Resolution) error {
	if a.Kind != ApprovalQuestion || a.Question == nil || r.Decision != Allow || (r.Cause != "" && r.Cause != CauseClient) {
		return nil
	}
	if len(r.Answers) > 1 && !a.Question.MultiSelect {
		return &BadAnswerError{ApprovalID: a.ID, Reason: fmt.Sprintf("the question takes one answer, not %d", len(r.Answers))}
	}
	for _, id := range r.Answers {
		if !slices.ContainsFunc(a.Question.Options, func(o Option) bool { return o.ID == id }) {
			return &BadAnswerError{ApprovalID: a.ID, Reason: fmt.Sprintf("answer %q is not an option of the question", id)}
		}
	}
	return nil
}
