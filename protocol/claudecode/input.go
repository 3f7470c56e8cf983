package claudecode

import "encoding/json"

// UserInput is a user line written to the CLI's stdin to start a turn.
type UserInput struct {
	Content         Content
	SessionID       string // "default" when empty, as the official SDKs send
	ParentToolUseID *string
	UUID            string
	// Priority is "now", "next" or "later" (queueing while a turn runs).
	Priority string
}

// EncodeUserInput builds the stdin line for a user turn. A single text block
// is sent as a plain string, as the CLI's own captures show.
func EncodeUserInput(in UserInput) ([]byte, error) {
	var content any = in.Content
	if len(in.Content) == 1 {
		if t, ok := in.Content[0].(TextBlock); ok {
			content = t.Text
		}
	}
	sid := in.SessionID
	if sid == "" {
		sid = "default"
	}
	return json.Marshal(struct {
		Type            string  `json:"type"`
		Message         any     `json:"message"`
		ParentToolUseID *string `json:"parent_tool_use_id"`
		SessionID       string  `json:"session_id"`
		UUID            string  `json:"uuid,omitempty"`
		Priority        string  `json:"priority,omitempty"`
	}{
		Type:            TypeUser,
		Message:         map[string]any{"role": "user", "content": content},
		ParentToolUseID: in.ParentToolUseID,
		SessionID:       sid,
		UUID:            in.UUID,
		Priority:        in.Priority,
	})
}
