package opencode

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"time"

	segjson "github.com/segmentio/encoding/json"
)

// decode unmarshals a whole JSON value into v with segmentio/encoding in
// ZeroCopy mode: strings without escapes and raw values alias data instead
// of copying it, so a tool's large output costs its size once. data must
// not be modified while the decoded values live.
func decode(data []byte, v any) error {
	rest, err := segjson.Parse(data, v, segjson.ZeroCopy)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return errTrailingData
	}
	return nil
}

var errTrailingData = errors.New("invalid character after top-level value")

// Millis is a time in milliseconds since the Unix epoch, as opencode sends
// every time. It accepts any JSON number (some schema fields are "number",
// not "integer"), dropping a fraction.
type Millis int64

// Time converts m to a time.Time (the zero Time for 0).
func (m Millis) Time() time.Time {
	if m == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(m))
}

func (m *Millis) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	if n, err := strconv.ParseInt(string(data), 10, 64); err == nil {
		*m = Millis(n)
		return nil
	}
	f, err := strconv.ParseFloat(string(data), 64)
	if err != nil || math.IsNaN(f) || f >= math.MaxInt64 || f <= math.MinInt64 {
		return &numberError{text: string(data)}
	}
	*m = Millis(f)
	return nil
}

type numberError struct{ text string }

func (e *numberError) Error() string {
	shown := e.text
	if len(shown) > 64 {
		shown = shown[:64] + "…"
	}
	return "not a time in milliseconds: " + shown
}

// Tokens is a token count of a message or a step. Total is set once the
// message or step is finished.
type Tokens struct {
	Total     float64     `json:"total,omitempty"`
	Input     float64     `json:"input"`
	Output    float64     `json:"output"`
	Reasoning float64     `json:"reasoning"`
	Cache     TokensCache `json:"cache"`
}

// SessionTokens is a session's token count so far.
type SessionTokens struct {
	Input     float64     `json:"input"`
	Output    float64     `json:"output"`
	Reasoning float64     `json:"reasoning"`
	Cache     TokensCache `json:"cache"`
}

// TokensCache counts prompt-cache reads and writes.
type TokensCache struct {
	Read  float64 `json:"read"`
	Write float64 `json:"write"`
}

// ModelRef names a model the way messages and prompts do.
type ModelRef struct {
	ProviderID string `json:"providerID"`
	ModelID    string `json:"modelID"`
	Variant    string `json:"variant,omitempty"`
}

// SessionModel names a session's model; sessions spell the model's id "id".
type SessionModel struct {
	ID         string `json:"id"`
	ProviderID string `json:"providerID"`
	Variant    string `json:"variant,omitempty"`
}

// FileDiff is one file's change: a session's diff (session.diff, GET
// /session/{id}/diff) and a user message's summary (SnapshotFileDiff in the
// OpenAPI document).
type FileDiff struct {
	File      string  `json:"file,omitempty"`
	Patch     string  `json:"patch,omitempty"`
	Additions float64 `json:"additions"`
	Deletions float64 `json:"deletions"`
	Status    string  `json:"status,omitempty"` // added, deleted, modified
}

// File change statuses.
const (
	FileAdded    = "added"
	FileDeleted  = "deleted"
	FileModified = "modified"
)

// Todo is one entry of a session's todo list.
type Todo struct {
	Content  string `json:"content"`
	Status   string `json:"status"`   // pending, in_progress, completed, cancelled
	Priority string `json:"priority"` // high, medium, low
}
