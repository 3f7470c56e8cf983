package fakeanthropic

import (
	"encoding/json"
	"strings"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// messagesRequest is the part of a Messages API request body the fake reads.
type messagesRequest struct {
	Model    string         `json:"model"`
	Stream   bool           `json:"stream"`
	Messages []inputMessage `json:"messages"`
}

type inputMessage struct {
	Role    string  `json:"role"`
	Content content `json:"content"`
}

// content is a message's or tool_result's content: the API takes either a
// plain string or a list of blocks, so both decode into blocks.
type content []inputBlock

type inputBlock struct {
	Type    string  `json:"type"`
	Text    string  `json:"text"`
	Content content `json:"content"` // tool_result only
	IsError bool    `json:"is_error"`
	Source  *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"` // image only
}

func (c *content) UnmarshalJSON(b []byte) error {
	parts, err := fakehttp.StringOrList(b, func(s string) inputBlock { return inputBlock{Type: "text", Text: s} })
	if err != nil {
		return err
	}
	*c = parts
	return nil
}

// text joins the text blocks, one per line.
func (c content) text() string {
	var parts []string
	for _, b := range c {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// lastUser is the content of the last user message. The CLI may append
// other roles after it (2.1.197 sent a trailing "system" message).
func (r *messagesRequest) lastUser() content {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return nil
}

// toolResults joins the text of every tool_result block, or reports none.
// The CLI appends <system-reminder>s (tokens left, …) to tool output too.
func (c content) toolResults() (string, bool) {
	var parts []string
	for _, b := range c {
		if b.Type == "tool_result" {
			parts = append(parts, strings.TrimSpace(stripReminders(b.Content.text())))
		}
	}
	return strings.Join(parts, "\n"), len(parts) > 0
}

// prompt is what the user typed: the text blocks without the
// <system-reminder> sections the CLI prepends, so context it injects
// (agent lists, memory, dates) can neither trigger a scenario nor be echoed.
func (c content) prompt() string {
	return strings.TrimSpace(stripReminders(c.text()))
}

func stripReminders(s string) string {
	const open, end = "<system-reminder>", "</system-reminder>"
	var out strings.Builder
	for {
		before, after, found := strings.Cut(s, open)
		out.WriteString(before)
		if !found {
			return out.String()
		}
		_, s, found = strings.Cut(after, end)
		if !found {
			return out.String()
		}
	}
}

// Images are the base64 image blocks of the user messages of every
// request received, each once, in the order they first came.
func (s *Server) Images() []fakehttp.Image {
	var out []fakehttp.Image
	for _, r := range s.Requests() {
		var req messagesRequest
		if r.Path != "/v1/messages" || json.Unmarshal(r.Body, &req) != nil {
			continue
		}
		for _, m := range req.Messages {
			for _, b := range m.Content {
				if m.Role != "user" || b.Type != "image" || b.Source == nil || b.Source.Type != "base64" {
					continue
				}
				if img, ok := fakehttp.Base64Image(b.Source.MediaType, b.Source.Data); ok {
					out = fakehttp.AddImage(out, img)
				}
			}
		}
	}
	return out
}
