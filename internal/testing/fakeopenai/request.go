package fakeopenai

import (
	"encoding/json"
	"strings"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// content is a message's content or a tool's output: the APIs take either a
// plain string or a list of parts, so both decode into parts.
type content []contentPart

// contentPart is one part: input_text, output_text, text, or any other kind
// (an image, a file), whose text is empty. An image's URL is a string in
// the Responses API (input_image), an object in Chat Completions
// (image_url).
type contentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
}

// image is the part's image, when it is one given as a data: URL.
func (p contentPart) image() (fakehttp.Image, bool) {
	var url string
	switch p.Type {
	case "input_image":
		if json.Unmarshal(p.ImageURL, &url) != nil {
			return fakehttp.Image{}, false
		}
	case "image_url":
		var obj struct {
			URL string `json:"url"`
		}
		if json.Unmarshal(p.ImageURL, &obj) != nil {
			return fakehttp.Image{}, false
		}
		url = obj.URL
	default:
		return fakehttp.Image{}, false
	}
	return fakehttp.DataURLImage(url)
}

func (c *content) UnmarshalJSON(b []byte) error {
	parts, err := fakehttp.StringOrList(b, func(s string) contentPart { return contentPart{Type: "text", Text: s} })
	if err != nil {
		return err
	}
	*c = parts
	return nil
}

// text joins the parts' text, one part per line.
func (c content) text() string {
	var parts []string
	for _, p := range c {
		if p.Text != "" {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// toolSpec is one tool a request offers: Responses API tools name
// themselves, Chat Completions ones inside "function"; built-in Responses
// tools (web_search, local_shell) have only a type.
type toolSpec struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

func (t toolSpec) name() string {
	switch {
	case t.Name != "":
		return t.Name
	case t.Function.Name != "":
		return t.Function.Name
	default:
		return t.Type
	}
}

func toolNames(specs []toolSpec) []string {
	out := make([]string, len(specs))
	for i, t := range specs {
		out[i] = t.name()
	}
	return out
}

// responsesRequest is the part of a Responses API request the fake reads.
type responsesRequest struct {
	Model  string         `json:"model"`
	Stream bool           `json:"stream"`
	Input  responsesInput `json:"input"`
	Tools  []toolSpec     `json:"tools"`
}

// responsesInput is the request's input: a plain string is one user message.
type responsesInput []responsesItem

type responsesItem struct {
	Type    string  `json:"type"`
	Role    string  `json:"role"`
	Content content `json:"content"`
	// Output is a *_call_output item's result, a string or a list of parts.
	Output content `json:"output"`
}

func (in *responsesInput) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*in = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*in = responsesInput{{Type: "message", Role: "user", Content: content{{Type: "input_text", Text: s}}}}
		return nil
	}
	var items []responsesItem
	if err := json.Unmarshal(b, &items); err != nil {
		return err
	}
	*in = items
	return nil
}

// turn is what the fake decides a reply from, whichever API asked.
type turn struct {
	// toolResult is set when the last input is a tool's result, output.
	toolResult bool
	output     string
	// prompt is the last user text, JSON-unquoted when it is one JSON string.
	prompt string
	tools  []string
	// title marks OpenCode's title-generation request.
	title bool
}

func (r *responsesRequest) turn() turn {
	t := turn{tools: toolNames(r.Tools)}
	if n := len(r.Input); n > 0 {
		// function_call_output, custom_tool_call_output, local_shell_call_output, …
		if last := r.Input[n-1]; strings.HasSuffix(last.Type, "_call_output") {
			t.toolResult, t.output = true, commandOutput(last.Output.text())
		}
	}
	for i := len(r.Input) - 1; i >= 0; i-- {
		if it := r.Input[i]; it.Role == "user" && (it.Type == "" || it.Type == "message") {
			t.prompt = unquote(it.Content.text())
			break
		}
	}
	return t
}

// chatRequest is the part of a Chat Completions request the fake reads.
type chatRequest struct {
	Model         string        `json:"model"`
	Stream        bool          `json:"stream"`
	StreamOptions streamOptions `json:"stream_options"`
	Messages      []chatMessage `json:"messages"`
	Tools         []toolSpec    `json:"tools"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role    string  `json:"role"`
	Content content `json:"content"`
}

func (r *chatRequest) turn() turn {
	t := turn{tools: toolNames(r.Tools)}
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "tool" {
		t.toolResult, t.output = true, r.Messages[n-1].Content.text()
	}
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			t.prompt = unquote(r.Messages[i].Content.text())
			break
		}
	}
	if len(r.Tools) == 0 {
		for _, m := range r.Messages {
			if m.Role == "system" && strings.Contains(m.Content.text(), "title generator") {
				t.title = true
				break
			}
		}
	}
	return t
}

// unquote reads OpenCode's JSON-quoted user text ("\"say hi\"") as the
// string it holds; any other text is only trimmed.
func unquote(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, `"`) {
		var inner string
		if err := json.Unmarshal([]byte(s), &inner); err == nil {
			return strings.TrimSpace(inner)
		}
	}
	return s
}

// commandOutput is the part of a Codex exec_command result after the header
// Codex puts before it ("Chunk ID: …\nWall time: …\n…\nOutput:\n"), which
// holds a random id and a timing; other results are kept whole.
func commandOutput(s string) string {
	if !strings.HasPrefix(s, "Chunk ID:") {
		return s
	}
	if _, out, ok := strings.Cut(s, "\nOutput:"); ok {
		return out
	}
	return s
}

// Images are the data: URL images of the user messages of every request
// received (Responses or Chat Completions), each once, in the order they
// first came.
func (s *Server) Images() []fakehttp.Image {
	var out []fakehttp.Image
	add := func(c content) {
		for _, p := range c {
			if img, ok := p.image(); ok {
				out = fakehttp.AddImage(out, img)
			}
		}
	}
	for _, r := range s.Requests() {
		switch r.Path {
		case "/v1/responses":
			var req responsesRequest
			if json.Unmarshal(r.Body, &req) == nil {
				for _, it := range req.Input {
					if it.Role == "user" {
						add(it.Content)
					}
				}
			}
		case "/v1/chat/completions":
			var req chatRequest
			if json.Unmarshal(r.Body, &req) == nil {
				for _, m := range req.Messages {
					if m.Role == "user" {
						add(m.Content)
					}
				}
			}
		}
	}
	return out
}
