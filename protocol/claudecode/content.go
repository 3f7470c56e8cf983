package claudecode

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Content block types (Anthropic Messages API).
const (
	BlockText             = "text"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockServerToolUse    = "server_tool_use"
	BlockImage            = "image"
	BlockDocument         = "document"
)

// ContentBlock is one block of a message's content.
type ContentBlock interface {
	BlockType() string
}

// TextBlock is plain text.
type TextBlock struct {
	Text string `json:"text"`
}

// ThinkingBlock is extended thinking.
type ThinkingBlock struct {
	Thinking  string `json:"thinking"`
	Signature string `json:"signature,omitempty"`
}

// RedactedThinkingBlock is thinking the API returned encrypted.
type RedactedThinkingBlock struct {
	Data string `json:"data"`
}

// ToolUseBlock is the model calling a tool.
type ToolUseBlock struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ServerToolUseBlock is a tool the API runs itself (web search, …).
type ServerToolUseBlock struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ToolResultBlock carries a tool's output back to the model. Content is a
// string or a list of blocks; ContentText flattens either to text.
type ToolResultBlock struct {
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// ImageBlock is an image a user message carries, in base64 (Anthropic's
// image block). It is written to the CLI; an image read back (a
// transcript's) stays an UnknownBlock.
type ImageBlock struct {
	Source ImageSource `json:"source"`
}

// ImageSource is an image block's bytes: Type "base64", Data the bytes in
// standard base64.
type ImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// Base64Image is an image block of data.
func Base64Image(mediaType string, data []byte) ImageBlock {
	return ImageBlock{Source: ImageSource{Type: "base64", MediaType: mediaType, Data: base64.StdEncoding.EncodeToString(data)}}
}

// UnknownBlock keeps a block this package does not model (images read
// back, documents, server tool results, future types) with its raw JSON.
type UnknownBlock struct {
	Type string
	Raw  json.RawMessage
}

func (TextBlock) BlockType() string             { return BlockText }
func (ThinkingBlock) BlockType() string         { return BlockThinking }
func (RedactedThinkingBlock) BlockType() string { return BlockRedactedThinking }
func (ToolUseBlock) BlockType() string          { return BlockToolUse }
func (ServerToolUseBlock) BlockType() string    { return BlockServerToolUse }
func (ToolResultBlock) BlockType() string       { return BlockToolResult }
func (ImageBlock) BlockType() string            { return BlockImage }
func (b UnknownBlock) BlockType() string        { return b.Type }

// ContentText flattens a tool result's content to text.
func (b ToolResultBlock) ContentText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var blocks Content
	if json.Unmarshal(b.Content, &blocks) != nil {
		return string(b.Content)
	}
	return blocks.Text()
}

// Content is a list of blocks. It decodes from a list, or from a plain string
// (which user messages may carry) as one TextBlock.
type Content []ContentBlock

// Text concatenates the text blocks.
func (c Content) Text() string {
	var n int
	for _, b := range c {
		if t, ok := b.(TextBlock); ok {
			n += len(t.Text)
		}
	}
	out := make([]byte, 0, n)
	for _, b := range c {
		if t, ok := b.(TextBlock); ok {
			out = append(out, t.Text...)
		}
	}
	return string(out)
}

// ToolUses returns the tool_use blocks.
func (c Content) ToolUses() []ToolUseBlock {
	var out []ToolUseBlock
	for _, b := range c {
		if t, ok := b.(ToolUseBlock); ok {
			out = append(out, t)
		}
	}
	return out
}

// anyBlock decodes every modelled block shape in one pass. Decoded by
// decode, its strings and raw values alias the line.
type anyBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (c *Content) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := decode(data, &s); err != nil {
			return err
		}
		*c = Content{TextBlock{Text: s}}
		return nil
	}
	return c.decodeBlocks(data)
}

// decodeBlocks splits the array into raw blocks and decodes each into one
// shape that holds every modelled block's fields; unknown blocks keep their
// raw JSON.
func (c *Content) decodeBlocks(data []byte) error {
	var raws []json.RawMessage
	if err := decode(data, &raws); err != nil {
		return fmt.Errorf("content: %w", err)
	}
	out := make(Content, len(raws))
	for i, raw := range raws {
		var a anyBlock
		if err := decode(raw, &a); err != nil {
			return fmt.Errorf("content block: %w", err)
		}
		if out[i] = modelledBlock(&a); out[i] == nil {
			out[i] = UnknownBlock{Type: a.Type, Raw: raw}
		}
	}
	*c = out
	return nil
}

// modelledBlock returns the typed block, or nil for a type not modelled.
func modelledBlock(a *anyBlock) ContentBlock {
	switch a.Type {
	case BlockText:
		return TextBlock{Text: a.Text}
	case BlockThinking:
		return ThinkingBlock{Thinking: a.Thinking, Signature: a.Signature}
	case BlockRedactedThinking:
		return RedactedThinkingBlock{Data: a.Data}
	case BlockToolUse:
		return ToolUseBlock{ID: a.ID, Name: a.Name, Input: a.Input}
	case BlockServerToolUse:
		return ServerToolUseBlock{ID: a.ID, Name: a.Name, Input: a.Input}
	case BlockToolResult:
		return ToolResultBlock{ToolUseID: a.ToolUseID, Content: a.Content, IsError: a.IsError}
	default:
		return nil
	}
}

// MarshalJSON writes blocks back in wire form (used for user messages sent
// to the CLI).
func (c Content) MarshalJSON() ([]byte, error) {
	out := make([]json.RawMessage, 0, len(c))
	for _, b := range c {
		raw, err := marshalBlock(b)
		if err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
	return json.Marshal(out)
}

func marshalBlock(b ContentBlock) (json.RawMessage, error) {
	if u, ok := b.(UnknownBlock); ok {
		return u.Raw, nil
	}
	body, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	return withField(body, "type", b.BlockType())
}

// withField inserts "key":"value" at the front of a JSON object.
func withField(obj []byte, key, value string) ([]byte, error) {
	if len(obj) < 2 || obj[0] != '{' {
		return nil, fmt.Errorf("claudecode: %T did not encode as an object", obj)
	}
	k, _ := json.Marshal(key)
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(obj)+len(k)+len(v)+2)
	out = append(out, '{')
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, v...)
	if len(obj) > 2 {
		out = append(out, ',')
	}
	return append(out, obj[1:]...), nil
}
