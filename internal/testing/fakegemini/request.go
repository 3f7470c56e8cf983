package fakegemini

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrBadRequest: a body the fake cannot read as a generateContent request.
var ErrBadRequest = errors.New("fakegemini: bad request")

// GenerateRequest is the part of a generateContent request the fake reads.
type GenerateRequest struct {
	Contents         []Content         `json:"contents"`
	GenerationConfig *GenerationConfig `json:"generationConfig,omitempty"`
}

// Content is one turn of the conversation.
type Content struct {
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Part is one piece of a turn: text, a function call or its response.
type Part struct {
	Text             string            `json:"text,omitempty"`
	InlineData       *InlineData       `json:"inlineData,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// InlineData is a part's bytes (an image), in base64.
type InlineData struct {
	MIMEType string `json:"mimeType"`
	Data     string `json:"data"`
}

// FunctionCall is a call the model makes.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// FunctionResponse is what the client's tool answered.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// GenerationConfig holds what the fake branches on.
type GenerationConfig struct {
	ResponseMIMEType string `json:"responseMimeType,omitempty"`
}

// ParseRequest reads a generateContent body. An empty or non-JSON body, or
// one without contents, is an error matching ErrBadRequest.
func ParseRequest(body []byte) (GenerateRequest, error) {
	var req GenerateRequest
	if len(body) == 0 {
		return req, fmt.Errorf("%w: empty body", ErrBadRequest)
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return req, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if len(req.Contents) == 0 {
		return req, fmt.Errorf("%w: no contents", ErrBadRequest)
	}
	return req, nil
}

// wantsJSON: the request asks for a JSON answer (the CLI's router).
func (r GenerateRequest) wantsJSON() bool {
	return r.GenerationConfig != nil && r.GenerationConfig.ResponseMIMEType == "application/json"
}

// lastPart is the last part of the last turn, if any.
func (r GenerateRequest) lastPart() (Part, bool) {
	last := r.Contents[len(r.Contents)-1]
	if len(last.Parts) == 0 {
		return Part{}, false
	}
	return last.Parts[len(last.Parts)-1], true
}

// prompt is the last user turn's last text part.
func (r GenerateRequest) prompt() string {
	for i := len(r.Contents) - 1; i >= 0; i-- {
		c := r.Contents[i]
		if c.Role != "user" {
			continue
		}
		for j := len(c.Parts) - 1; j >= 0; j-- {
			if p := c.Parts[j]; p.Text != "" && !p.Thought {
				return p.Text
			}
		}
	}
	return ""
}

// tokens is a rough count for countTokens: four bytes a token.
func (r GenerateRequest) tokens() int {
	n := 0
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			n += len(p.Text)/4 + 1
		}
	}
	return n
}

// toolOutput is what a function response says: the shell's output after
// its "Output:" label, else the output or error field, else the raw JSON.
func toolOutput(fr *FunctionResponse) string {
	var resp struct {
		Output string `json:"output"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(fr.Response, &resp); err != nil {
		return string(fr.Response)
	}
	if resp.Error != "" {
		return "error: " + resp.Error
	}
	if resp.Output == "" { // another tool's shape (an MCP tool's content): as it came
		return string(fr.Response)
	}
	out := resp.Output
	if _, after, ok := strings.Cut(out, "Output:"); ok {
		out, _, _ = strings.Cut(after, "\n")
	}
	return strings.TrimSpace(out)
}
