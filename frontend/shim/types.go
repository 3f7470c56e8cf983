package shim

import (
	"encoding/json"
	"time"
)

// AgentBrief is the body of /spawn, read leniently: the fields the shim
// uses are typed, the whole brief is kept as sent (Raw) to echo back in
// checkpoints, and unknown keys are ignored.
type AgentBrief struct {
	AgentID         string          `json:"agentId"`
	Role            string          `json:"role"`
	Description     string          `json:"description"`
	Workstream      string          `json:"workstream"`
	Constraints     []string        `json:"constraints"`
	ProjectBrief    ProjectBrief    `json:"projectBrief"`
	KnowledgeSnap   KnowledgeCounts `json:"knowledgeSnapshot"`
	ModelPreference string          `json:"modelPreference"`
	ProviderConfig  json.RawMessage `json:"providerConfig"`
	ControlMode     string          `json:"controlMode"`
	AllowedTools    []string        `json:"allowedTools"`
	Raw             json.RawMessage `json:"-"`
}

// ProjectBrief is the brief's project.
type ProjectBrief struct {
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Goals       []string `json:"goals"`
	Constraints []string `json:"constraints"`
}

// KnowledgeCounts is what the prompt renders of the knowledge snapshot:
// its counts, never its contents (as the reference shims do).
type KnowledgeCounts struct {
	Workstreams      []json.RawMessage `json:"workstreams"`
	PendingDecisions []json.RawMessage `json:"pendingDecisions"`
	ArtifactIndex    []json.RawMessage `json:"artifactIndex"`
	EstimatedTokens  int               `json:"estimatedTokens"`
}

// parseBrief reads a brief, keeping it whole in Raw.
func parseBrief(raw json.RawMessage) (AgentBrief, error) {
	var b AgentBrief
	if err := json.Unmarshal(raw, &b); err != nil {
		return AgentBrief{}, err
	}
	b.Raw = append(json.RawMessage(nil), raw...)
	return b, nil
}

// AgentHandle is the reply of /spawn and /resume.
type AgentHandle struct {
	ID         string `json:"id"`
	PluginName string `json:"pluginName"`
	Status     string `json:"status"`
	SessionID  string `json:"sessionId"`
}

// Agent statuses of a handle.
const (
	StatusRunning = "running"
	StatusPaused  = "paused"
	StatusWaiting = "waiting_on_human"
	StatusDone    = "completed"
	StatusIdle    = "idle"
	StatusError   = "error"
)

// KillRequest is the body of /kill; grace defaults to true.
type KillRequest struct {
	Grace          *bool `json:"grace"`
	GraceTimeoutMs int64 `json:"graceTimeoutMs"`
}

// KillResponse is the reply of /kill.
type KillResponse struct {
	State              *SerializedAgentState `json:"state"`
	ArtifactsExtracted int                   `json:"artifactsExtracted"`
	CleanShutdown      bool                  `json:"cleanShutdown"`
}

// SdkCheckpoint names what a resume continues: the agent's own session
// (sessionId), or the mock's script position. See docs/shim.md for the
// sdk tag each agent kind uses.
type SdkCheckpoint struct {
	SDK            string         `json:"sdk"`
	SessionID      string         `json:"sessionId,omitempty"`
	RunStateJSON   string         `json:"runStateJson,omitempty"`
	LastMessageID  string         `json:"lastMessageId,omitempty"`
	StateSnapshot  map[string]any `json:"stateSnapshot,omitempty"`
	ScriptPosition *int           `json:"scriptPosition,omitempty"`
}

// SerializedAgentState is the reply of /pause and /checkpoint, and the
// body of /resume.
type SerializedAgentState struct {
	AgentID             string          `json:"agentId"`
	PluginName          string          `json:"pluginName"`
	SessionID           string          `json:"sessionId"`
	Checkpoint          SdkCheckpoint   `json:"checkpoint"`
	BriefSnapshot       json.RawMessage `json:"briefSnapshot"`
	ConversationSummary string          `json:"conversationSummary,omitempty"`
	PendingDecisionIDs  []string        `json:"pendingDecisionIds"`
	LastSequence        int64           `json:"lastSequence"`
	SerializedAt        string          `json:"serializedAt"`
	SerializedBy        string          `json:"serializedBy"`
	EstimatedSizeBytes  int             `json:"estimatedSizeBytes"`
}

// ResolveRequest is the body of /resolve.
type ResolveRequest struct {
	DecisionID string     `json:"decisionId"`
	Resolution Resolution `json:"resolution"`
}

// Resolution is either variant of the backend's resolution, by type.
type Resolution struct {
	Type           string          `json:"type"` // option or tool_approval
	ChosenOptionID string          `json:"chosenOptionId"`
	Action         string          `json:"action"` // approve, reject, modify
	ModifiedArgs   json.RawMessage `json:"modifiedArgs"`
	AlwaysApprove  bool            `json:"alwaysApprove"`
	Rationale      string          `json:"rationale"`
}

// ContextInjection is the body of /inject-context.
type ContextInjection struct {
	Content  string `json:"content"`
	Format   string `json:"format"`
	Priority string `json:"priority"`
}

// updateBrief is the body of /update-brief as the backend sends it
// ({handle, changes}); a bare object of changes is taken too.
type updateBrief struct {
	Changes json.RawMessage `json:"changes"`
}

// Bootstrap is AGENT_BOOTSTRAP.
type Bootstrap struct {
	BackendURL             string `json:"backendUrl"`
	BackendToken           string `json:"backendToken"`
	TokenExpiresAt         string `json:"tokenExpiresAt"`
	AgentID                string `json:"agentId"`
	ArtifactUploadEndpoint string `json:"artifactUploadEndpoint"`
	// ShimToken, when set, is the shim's token: what the backend sends
	// the shim (Authorization: Bearer), not what the shim sends it
	// (BackendToken). EnvToken is the other place to give it.
	ShimToken string `json:"shimToken,omitempty"`
}

// Health is the reply of /health.
type Health struct {
	Status                 string        `json:"status"`
	AgentStatus            string        `json:"agentStatus"`
	UptimeMs               int64         `json:"uptimeMs"`
	ResourceUsage          ResourceUsage `json:"resourceUsage"`
	PendingEventBufferSize int           `json:"pendingEventBufferSize"`
}

// ResourceUsage is what the agent uses: CPU and memory of the shim's
// process tree (the shim and the agent it runs), disk of its workspace.
type ResourceUsage struct {
	CPUPercent  float64 `json:"cpuPercent"`
	MemoryMb    float64 `json:"memoryMb"`
	DiskMb      float64 `json:"diskMb"`
	CollectedAt string  `json:"collectedAt"`
}

// Envelope is one AdapterEvent on WS /events.
type Envelope struct {
	SourceEventID    string `json:"sourceEventId"`
	SourceSequence   int64  `json:"sourceSequence"`
	SourceOccurredAt string `json:"sourceOccurredAt"`
	RunID            string `json:"runId"`
	Event            Event  `json:"event"`
}

// Event is one AgentEvent: a map, so each variant carries exactly its
// keys (the backend requires some present even when null).
type Event map[string]any

// utc formats t as the backend's validators require: UTC with a Z, and
// microseconds.
func utc(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }
