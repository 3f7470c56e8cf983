package codexapp

import (
	"encoding/base64"
	"encoding/json"
)

// The methods this package types. Client requests are sent by a driver;
// server requests must be answered; notifications flow server to client
// (but "initialized", which the client sends once after initialize).
const (
	MethodInitialize    = "initialize"
	MethodInitialized   = "initialized"
	MethodThreadStart   = "thread/start"
	MethodThreadResume  = "thread/resume"
	MethodThreadFork    = "thread/fork"
	MethodThreadRead    = "thread/read"
	MethodTurnStart     = "turn/start"
	MethodTurnSteer     = "turn/steer"
	MethodTurnInterrupt = "turn/interrupt"

	MethodCommandApproval    = "item/commandExecution/requestApproval"
	MethodFileChangeApproval = "item/fileChange/requestApproval"

	MethodError                 = "error"
	MethodThreadStarted         = "thread/started"
	MethodTurnStarted           = "turn/started"
	MethodTurnCompleted         = "turn/completed"
	MethodTurnDiffUpdated       = "turn/diff/updated"
	MethodTurnPlanUpdated       = "turn/plan/updated"
	MethodTokenUsageUpdated     = "thread/tokenUsage/updated"
	MethodItemStarted           = "item/started"
	MethodItemCompleted         = "item/completed"
	MethodAgentMessageDelta     = "item/agentMessage/delta"
	MethodReasoningSummaryDelta = "item/reasoning/summaryTextDelta"
	MethodReasoningTextDelta    = "item/reasoning/textDelta"
	MethodCommandOutputDelta    = "item/commandExecution/outputDelta"
	MethodFileChangeOutputDelta = "item/fileChange/outputDelta"
	MethodPlanDelta             = "item/plan/delta"
	MethodServerRequestResolved = "serverRequest/resolved"
)

// newParams returns a new value of the params type of a method this package
// decodes (server requests and notifications), nil for any other.
func newParams(method string) Params {
	switch method {
	case MethodCommandApproval:
		return new(CommandApprovalParams)
	case MethodFileChangeApproval:
		return new(FileChangeApprovalParams)
	case MethodToolRequestUserInput:
		return new(ToolRequestUserInputParams)
	case MethodMcpElicitation:
		return new(McpElicitationParams)
	case MethodError:
		return new(ErrorNotification)
	case MethodThreadStarted:
		return new(ThreadStartedNotification)
	case MethodTurnStarted:
		return &TurnNotification{method: MethodTurnStarted}
	case MethodTurnCompleted:
		return &TurnNotification{method: MethodTurnCompleted}
	case MethodTurnDiffUpdated:
		return new(TurnDiffUpdatedNotification)
	case MethodTurnPlanUpdated:
		return new(TurnPlanUpdatedNotification)
	case MethodTokenUsageUpdated:
		return new(TokenUsageUpdatedNotification)
	case MethodItemStarted:
		return &ItemNotification{method: MethodItemStarted}
	case MethodItemCompleted:
		return &ItemNotification{method: MethodItemCompleted}
	case MethodAgentMessageDelta, MethodReasoningSummaryDelta, MethodReasoningTextDelta,
		MethodCommandOutputDelta, MethodFileChangeOutputDelta, MethodPlanDelta:
		return &DeltaNotification{method: method}
	case MethodServerRequestResolved:
		return new(ServerRequestResolvedNotification)
	}
	return nil
}

// Client requests.

// InitializeParams opens a connection: {"clientInfo", "capabilities"}.
type InitializeParams struct {
	ClientInfo   ClientInfo              `json:"clientInfo"`
	Capabilities *InitializeCapabilities `json:"capabilities,omitempty"`
}

// ClientInfo names the client in the server's user agent.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// InitializeCapabilities are what the client opts into or out of.
type InitializeCapabilities struct {
	ExperimentalAPI bool `json:"experimentalApi,omitempty"`
	// OptOutNotificationMethods are notifications the server must not send.
	OptOutNotificationMethods []string `json:"optOutNotificationMethods,omitempty"`
}

func (*InitializeParams) Method() string { return MethodInitialize }

// Approval policies (AskForApproval) and sandbox modes (SandboxMode) of the
// 0.169.0 schema.
const (
	ApprovalUntrusted = "untrusted"  // ask before anything but known-safe reads
	ApprovalOnRequest = "on-request" // the model decides when to ask
	ApprovalNever     = "never"

	SandboxReadOnly       = "read-only"
	SandboxWorkspaceWrite = "workspace-write"
	SandboxFullAccess     = "danger-full-access"
)

// ThreadStartParams starts a thread. Empty strings are left out: the server
// takes an empty model as an error.
type ThreadStartParams struct {
	Cwd            string `json:"cwd,omitempty"`
	Model          string `json:"model,omitempty"`
	ApprovalPolicy string `json:"approvalPolicy,omitempty"`
	Sandbox        string `json:"sandbox,omitempty"`
	// Config overrides config.toml keys for this thread (dotted keys).
	Config map[string]any `json:"config,omitempty"`
}

func (*ThreadStartParams) Method() string { return MethodThreadStart }

// ThreadResumeParams loads a thread from its rollout by id.
type ThreadResumeParams struct {
	ThreadID       string         `json:"threadId"`
	Cwd            string         `json:"cwd,omitempty"`
	Model          string         `json:"model,omitempty"`
	ApprovalPolicy string         `json:"approvalPolicy,omitempty"`
	Sandbox        string         `json:"sandbox,omitempty"`
	Config         map[string]any `json:"config,omitempty"`
	// ExcludeTurns returns the thread without its history (thread/read
	// gives it when needed).
	ExcludeTurns bool `json:"excludeTurns,omitempty"`
}

func (*ThreadResumeParams) Method() string { return MethodThreadResume }

// ThreadForkParams starts a new thread from an old one's history.
type ThreadForkParams struct {
	ThreadID       string         `json:"threadId"`
	Cwd            string         `json:"cwd,omitempty"`
	Model          string         `json:"model,omitempty"`
	ApprovalPolicy string         `json:"approvalPolicy,omitempty"`
	Sandbox        string         `json:"sandbox,omitempty"`
	Config         map[string]any `json:"config,omitempty"`
	ExcludeTurns   bool           `json:"excludeTurns,omitempty"`
}

func (*ThreadForkParams) Method() string { return MethodThreadFork }

// ThreadReadParams reads a thread; IncludeTurns adds its history from the
// rollout.
type ThreadReadParams struct {
	ThreadID     string `json:"threadId"`
	IncludeTurns bool   `json:"includeTurns,omitempty"`
}

func (*ThreadReadParams) Method() string { return MethodThreadRead }

// ThreadResponse is the result of thread/start, thread/resume and
// thread/fork: the thread and the model it runs.
type ThreadResponse struct {
	Thread Thread `json:"thread"`
	Model  string `json:"model"`
}

func (r *ThreadResponse) check() error { return require("thread.id", r.Thread.ID) }

// ThreadReadResponse is the result of thread/read.
type ThreadReadResponse struct {
	Thread Thread `json:"thread"`
}

func (r *ThreadReadResponse) check() error { return require("thread.id", r.Thread.ID) }

// Thread is a conversation. Turns is filled by thread/read with
// includeTurns (and by resume unless excludeTurns).
type Thread struct {
	ID           string `json:"id"`
	Cwd          string `json:"cwd"`
	Model        string `json:"model,omitempty"`
	ForkedFromID string `json:"forkedFromId,omitempty"`
	Turns        []Turn `json:"turns"`
}

// UserInput is one piece of a prompt: text (Type "text", Text) or an
// image (Type "image", URL: an https: or data: URL).
type UserInput struct {
	Type string `json:"type"`
	Text string `json:"text"`
	URL  string `json:"url,omitempty"`
}

// MarshalJSON writes the fields of the piece's type only: an image has
// no text.
func (u UserInput) MarshalJSON() ([]byte, error) {
	if u.Type == "image" {
		return json.Marshal(struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		}{u.Type, u.URL})
	}
	type plain UserInput
	return json.Marshal(plain(u))
}

// TextInput is a prompt of one text piece.
func TextInput(text string) []UserInput { return []UserInput{{Type: "text", Text: text}} }

// ImageInput is an image piece of data, as a data: URL.
func ImageInput(mediaType string, data []byte) UserInput {
	return UserInput{Type: "image", URL: "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data)}
}

// TurnStartParams starts a turn on a thread.
type TurnStartParams struct {
	ThreadID       string      `json:"threadId"`
	Input          []UserInput `json:"input"`
	Cwd            string      `json:"cwd,omitempty"`
	Model          string      `json:"model,omitempty"`
	ApprovalPolicy string      `json:"approvalPolicy,omitempty"`
}

func (*TurnStartParams) Method() string { return MethodTurnStart }

// TurnStartResponse is the result of turn/start.
type TurnStartResponse struct {
	Turn Turn `json:"turn"`
}

func (r *TurnStartResponse) check() error { return require("turn.id", r.Turn.ID) }

// TurnSteerParams adds input to the running turn ExpectedTurnID.
type TurnSteerParams struct {
	ThreadID       string      `json:"threadId"`
	ExpectedTurnID string      `json:"expectedTurnId"`
	Input          []UserInput `json:"input"`
}

func (*TurnSteerParams) Method() string { return MethodTurnSteer }

// TurnSteerResponse is the result of turn/steer.
type TurnSteerResponse struct {
	TurnID string `json:"turnId"`
}

// TurnInterruptParams interrupts a running turn; it ends with turn/completed
// status interrupted.
type TurnInterruptParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

func (*TurnInterruptParams) Method() string { return MethodTurnInterrupt }

// Turn is one prompt's work. Items is filled in thread/read's history and,
// as a summary, in turn/completed.
type Turn struct {
	ID         string       `json:"id"`
	Status     string       `json:"status"` // completed, interrupted, failed, inProgress
	Items      []ThreadItem `json:"items"`
	Error      *TurnError   `json:"error,omitempty"`
	DurationMs *int64       `json:"durationMs,omitempty"`
}

// Turn statuses.
const (
	TurnCompleted   = "completed"
	TurnInterrupted = "interrupted"
	TurnFailed      = "failed"
	TurnInProgress  = "inProgress"
)

// TurnError is why a turn failed (or an error notification's cause).
type TurnError struct {
	Message string `json:"message"`
	// CodexErrorInfo is a string ("internalServerError") or an object
	// ({"httpConnectionFailed":{"httpStatusCode":502}}); see HTTPStatus.
	CodexErrorInfo json.RawMessage `json:"codexErrorInfo,omitempty"`
}
