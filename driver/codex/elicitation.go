package codex

import (
	"encoding/json"
	"strings"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/protocol/codexapp"
)

// elicitation is an MCP server's request for input as a question: a form
// of one field with choices asks among them (several for an array of
// them); another form, or a page to visit, asks only for an allow or a
// deny.
type elicitation struct {
	question *agent.Question
	// field is the form's one field the choice fills, and values the
	// value of each option (a oneOf's const, under its title).
	field  string
	values []string
	multi  bool
	// url is a page to visit: an accept carries no content.
	url bool
}

// elicitationSchema is the part of an elicitation's form the driver reads.
type elicitationSchema struct {
	Properties map[string]elicitationField `json:"properties"`
}

type elicitationField struct {
	Title string            `json:"title"`
	Type  string            `json:"type"`
	Enum  []string          `json:"enum"`
	OneOf []elicitationEnum `json:"oneOf"`
	AnyOf []elicitationEnum `json:"anyOf"`
	Items *elicitationField `json:"items"`
}

type elicitationEnum struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

func newElicitation(p *codexapp.McpElicitationParams) *elicitation {
	prompt := p.Message
	if p.Mode == codexapp.ElicitationURL && p.URL != "" {
		prompt = strings.TrimSpace(prompt + "\n" + p.URL)
	}
	if prompt == "" {
		prompt = p.ServerName + " asks for input"
	}
	e := &elicitation{question: &agent.Question{Prompt: prompt}, url: p.Mode == codexapp.ElicitationURL}
	var form elicitationSchema
	if e.url || json.Unmarshal(p.RequestedSchema, &form) != nil || len(form.Properties) != 1 {
		return e
	}
	for name, field := range form.Properties {
		choices := field
		if field.Type == "array" && field.Items != nil {
			choices, e.multi = *field.Items, true
		}
		labels, values := choicesOf(choices)
		if len(labels) == 0 {
			return e
		}
		e.field, e.values = name, values
		e.question = agent.NewQuestion(prompt, e.multi, labels)
	}
	return e
}

// choicesOf are the labels and values of a field's choices: an enum's
// values, or a oneOf's (anyOf's) titles and consts.
func choicesOf(f elicitationField) (labels, values []string) {
	if len(f.Enum) > 0 {
		return f.Enum, f.Enum
	}
	options := f.OneOf
	if len(options) == 0 {
		options = f.AnyOf
	}
	for _, o := range options {
		label := o.Title
		if label == "" {
			label = o.Const
		}
		labels, values = append(labels, label), append(values, o.Const)
	}
	return labels, values
}

// answer is the elicitation's response: an allow accepts (with the chosen
// values as the form's one field), a deny declines.
func (e *elicitation) answer(r agent.Resolution) codexapp.McpElicitationResponse {
	if r.Decision != agent.Allow {
		return codexapp.McpElicitationResponse{Action: codexapp.ElicitationDecline}
	}
	switch {
	case e.url:
		return codexapp.McpElicitationResponse{Action: codexapp.ElicitationAccept}
	case e.field == "":
		return codexapp.McpElicitationResponse{Action: codexapp.ElicitationAccept, Content: map[string]any{}}
	}
	chosen := []string{}
	for _, id := range r.Answers {
		for i, o := range e.question.Options {
			if o.ID == id {
				chosen = append(chosen, e.values[i])
			}
		}
	}
	var value any = chosen
	if !e.multi {
		value = ""
		if len(chosen) > 0 {
			value = chosen[0]
		}
	}
	return codexapp.McpElicitationResponse{Action: codexapp.ElicitationAccept, Content: map[string]any{e.field: value}}
}
