package claudecli

import (
	"encoding/json"
	"strings"

	"github.com/tetherhq/tether/agent"
)

// askTool is Claude Code's tool for asking the user to choose: its call
// reaches can_use_tool, and the answer goes back as the tool's input with
// the chosen labels added.
const askTool = "AskUserQuestion"

// askInput is AskUserQuestion's input, as far as a question approval
// needs it; everything else in it is passed back untouched.
type askInput struct {
	Questions []struct {
		Question    string `json:"question"`
		MultiSelect bool   `json:"multiSelect"`
		Options     []struct {
			Label string `json:"label"`
		} `json:"options"`
	} `json:"questions"`
}

// askQuestion is the canonical question of an AskUserQuestion call: its
// first question, the options numbered from 0 (as the question item's).
// ok is false when the input holds no question.
func askQuestion(input json.RawMessage) (q *agent.Question, ok bool) {
	var in askInput
	if json.Unmarshal(input, &in) != nil || len(in.Questions) == 0 {
		return nil, false
	}
	first := in.Questions[0]
	labels := make([]string, len(first.Options))
	for i, o := range first.Options {
		labels[i] = o.Label
	}
	return agent.NewQuestion(first.Question, first.MultiSelect, labels), true
}

// answeredInput is AskUserQuestion's input with the answers as Claude
// Code takes them: "answers" maps the question's text to the chosen
// labels, comma-separated where several are chosen.
func answeredInput(input json.RawMessage, q *agent.Question, answers []string) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(input, &fields); err != nil {
		return nil, err
	}
	chosen, err := json.Marshal(map[string]string{q.Prompt: strings.Join(q.Labels(answers), ", ")})
	if err != nil {
		return nil, err
	}
	fields["answers"] = chosen
	return json.Marshal(fields)
}
