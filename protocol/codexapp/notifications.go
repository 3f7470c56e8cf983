package codexapp

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// ErrorNotification reports an error of a turn; WillRetry says the server
// goes on retrying by itself (the turn is not over).
type ErrorNotification struct {
	Error     TurnError `json:"error"`
	WillRetry bool      `json:"willRetry"`
	ThreadID  string    `json:"threadId"`
	TurnID    string    `json:"turnId"`
}

func (*ErrorNotification) Method() string { return MethodError }

// ThreadStartedNotification announces a thread (started, resumed, forked).
type ThreadStartedNotification struct {
	Thread Thread `json:"thread"`
}

func (*ThreadStartedNotification) Method() string { return MethodThreadStarted }
func (n *ThreadStartedNotification) check() error { return require("thread.id", n.Thread.ID) }

// TurnNotification is turn/started or turn/completed.
type TurnNotification struct {
	ThreadID string `json:"threadId"`
	Turn     Turn   `json:"turn"`
	method   string
}

func (n *TurnNotification) Method() string { return n.method }
func (n *TurnNotification) check() error   { return require("turn.id", n.Turn.ID) }

// TurnDiffUpdatedNotification carries the turn's whole unified diff so far.
type TurnDiffUpdatedNotification struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Diff     string `json:"diff"`
}

func (*TurnDiffUpdatedNotification) Method() string { return MethodTurnDiffUpdated }

// TurnPlanUpdatedNotification carries the turn's whole plan.
type TurnPlanUpdatedNotification struct {
	ThreadID    string         `json:"threadId"`
	TurnID      string         `json:"turnId"`
	Explanation string         `json:"explanation,omitempty"`
	Plan        []TurnPlanStep `json:"plan"`
}

// TurnPlanStep is one step; Status is pending, inProgress or completed.
type TurnPlanStep struct {
	Step   string `json:"step"`
	Status string `json:"status"`
}

func (*TurnPlanUpdatedNotification) Method() string { return MethodTurnPlanUpdated }

// TokenUsageUpdatedNotification reports the thread's token usage: Total
// since the thread started, Last of the latest model request.
type TokenUsageUpdatedNotification struct {
	ThreadID   string `json:"threadId"`
	TurnID     string `json:"turnId"`
	TokenUsage struct {
		Total TokenUsage `json:"total"`
		Last  TokenUsage `json:"last"`
	} `json:"tokenUsage"`
}

// TokenUsage is a TokenUsageBreakdown.
type TokenUsage struct {
	TotalTokens           int64 `json:"totalTokens"`
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
}

func (*TokenUsageUpdatedNotification) Method() string { return MethodTokenUsageUpdated }

// ItemNotification is item/started or item/completed.
type ItemNotification struct {
	ThreadID string     `json:"threadId"`
	TurnID   string     `json:"turnId"`
	Item     ThreadItem `json:"item"`
	method   string
}

func (n *ItemNotification) Method() string { return n.method }
func (n *ItemNotification) check() error {
	return require("item.id", n.Item.ID, "item.type", n.Item.Type)
}

// DeltaNotification is a piece of an item in progress: an agent message's
// text, reasoning, a command's or a file change's output, a plan's text.
type DeltaNotification struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	ItemID   string `json:"itemId"`
	Delta    string `json:"delta"`
	method   string
}

func (n *DeltaNotification) Method() string { return n.method }
func (n *DeltaNotification) check() error   { return require("itemId", n.ItemID) }

// ServerRequestResolvedNotification says a server request was settled: by
// the client's answer, or by the server itself (a turn that started,
// completed or was interrupted clears what it asked).
type ServerRequestResolvedNotification struct {
	ThreadID  string `json:"threadId"`
	RequestID ID     `json:"requestId"`
}

func (*ServerRequestResolvedNotification) Method() string { return MethodServerRequestResolved }
func (n *ServerRequestResolvedNotification) check() error {
	if n.RequestID.IsZero() {
		return &MissingFieldError{Field: "requestId"}
	}
	return nil
}

// Server requests: approvals.

// CommandApprovalParams asks before a command runs.
type CommandApprovalParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	ItemID   string `json:"itemId"`
	// ApprovalID tells apart several approvals of one item; empty for a
	// plain shell command.
	ApprovalID string `json:"approvalId,omitempty"`
	Command    string `json:"command,omitempty"`
	Cwd        string `json:"cwd,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// AvailableDecisions lists the decisions the server accepts (strings
	// and objects), where it says.
	AvailableDecisions []json.RawMessage `json:"availableDecisions,omitempty"`
}

func (*CommandApprovalParams) Method() string { return MethodCommandApproval }
func (p *CommandApprovalParams) check() error { return require("itemId", p.ItemID) }

// Offers reports whether decision (a plain string decision) is among the
// available ones; when the server lists none, every plain one is.
func (p *CommandApprovalParams) Offers(decision string) bool {
	if len(p.AvailableDecisions) == 0 {
		return true
	}
	want := strconv.Quote(decision)
	for _, d := range p.AvailableDecisions {
		if string(bytes.TrimSpace(d)) == want {
			return true
		}
	}
	return false
}

// FileChangeApprovalParams asks before a patch is applied; the changes are
// in the fileChange item ItemID.
type FileChangeApprovalParams struct {
	ThreadID  string `json:"threadId"`
	TurnID    string `json:"turnId"`
	ItemID    string `json:"itemId"`
	Reason    string `json:"reason,omitempty"`
	GrantRoot string `json:"grantRoot,omitempty"`
}

func (*FileChangeApprovalParams) Method() string { return MethodFileChangeApproval }
func (p *FileChangeApprovalParams) check() error { return require("itemId", p.ItemID) }

// Approval decisions (plain ones) of commands and file changes.
const (
	DecisionAccept           = "accept"
	DecisionAcceptForSession = "acceptForSession"
	DecisionDecline          = "decline" // the turn goes on
	DecisionCancel           = "cancel"  // the turn is interrupted too
)

// ApprovalResponse answers a command or file change approval.
type ApprovalResponse struct {
	Decision string `json:"decision"`
}
