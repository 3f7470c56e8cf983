package opencode

import "encoding/json"

// Session is a session's info: POST /session, GET /session/{id}, fork and
// revert answer with it, and session.created, session.updated and
// session.deleted carry it.
type Session struct {
	ID          string           `json:"id"`
	Slug        string           `json:"slug"`
	ProjectID   string           `json:"projectID"`
	WorkspaceID string           `json:"workspaceID,omitempty"`
	Directory   string           `json:"directory"`
	Path        string           `json:"path,omitempty"`
	ParentID    string           `json:"parentID,omitempty"` // the session this one was started from (a subagent's)
	Summary     *SessionSummary  `json:"summary,omitempty"`
	Cost        float64          `json:"cost,omitempty"`
	Tokens      *SessionTokens   `json:"tokens,omitempty"`
	Share       *SessionShare    `json:"share,omitempty"`
	Title       string           `json:"title"`
	Agent       string           `json:"agent,omitempty"`
	Model       *SessionModel    `json:"model,omitempty"`
	Version     string           `json:"version"`
	Metadata    json.RawMessage  `json:"metadata,omitempty"`
	Time        SessionTime      `json:"time"`
	Permission  []PermissionRule `json:"permission,omitempty"`
	Revert      *SessionRevert   `json:"revert,omitempty"`
}

// SessionSummary counts the lines and files a session changed.
type SessionSummary struct {
	Additions float64    `json:"additions"`
	Deletions float64    `json:"deletions"`
	Files     float64    `json:"files"`
	Diffs     []FileDiff `json:"diffs,omitempty"`
}

// SessionShare is a shared session's public address.
type SessionShare struct {
	URL string `json:"url"`
}

// SessionTime is when a session was created and last updated, and when it
// started compacting or was archived (0 if not).
type SessionTime struct {
	Created    Millis `json:"created"`
	Updated    Millis `json:"updated"`
	Compacting Millis `json:"compacting,omitempty"`
	Archived   Millis `json:"archived,omitempty"`
}

// SessionRevert is where a reverted session was reverted to.
type SessionRevert struct {
	MessageID string `json:"messageID"`
	PartID    string `json:"partID,omitempty"`
	Snapshot  string `json:"snapshot,omitempty"`
	Diff      string `json:"diff,omitempty"`
}

// PermissionRule is one rule of a session's permission ruleset.
type PermissionRule struct {
	Permission string `json:"permission"` // a tool's permission name: bash, edit, …
	Pattern    string `json:"pattern"`
	Action     string `json:"action"` // allow, deny, ask
}

// Permission rule actions.
const (
	ActionAllow = "allow"
	ActionDeny  = "deny"
	ActionAsk   = "ask"
)

// SessionStatus is what a session is doing: session.status carries it and
// GET /session/status maps session ids to it. Type is StatusIdle,
// StatusBusy or StatusRetry; the other fields are set for retry only.
type SessionStatus struct {
	Type    string       `json:"type"`
	Attempt int          `json:"attempt,omitempty"`
	Message string       `json:"message,omitempty"`
	Next    Millis       `json:"next,omitempty"` // when the next attempt starts
	Action  *RetryAction `json:"action,omitempty"`
}

// Session status types.
const (
	StatusIdle  = "idle"
	StatusBusy  = "busy"
	StatusRetry = "retry"
)

// RetryAction is what the user could do about a retried failure (sign in
// to a provider, say).
type RetryAction struct {
	Reason   string `json:"reason"`
	Provider string `json:"provider"`
	Title    string `json:"title"`
	Message  string `json:"message"`
	Label    string `json:"label"`
	Link     string `json:"link,omitempty"`
}
