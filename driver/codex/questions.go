package codex

import (
	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/protocol/codexapp"
)

// threadConfig is what every thread of the driver runs with over Codex's
// configuration: the model may ask the user questions (request_user_input)
// in Default mode too, which the driver answers as question approvals.
func threadConfig() map[string]any {
	return map[string]any{codexapp.FeatureDefaultModeRequestUserInput: true}
}

// userInputQuestion is the first question of a request_user_input call as
// the canonical model asks it, the options numbered from 0 (the others get
// no answer, as Claude Code's and OpenCode's questions beyond the first).
func userInputQuestion(p *codexapp.ToolRequestUserInputParams) *agent.Question {
	if len(p.Questions) == 0 {
		return &agent.Question{Prompt: "Codex asks for input"}
	}
	q := p.Questions[0]
	labels := make([]string, len(q.Options))
	for i, o := range q.Options {
		labels[i] = o.Label
	}
	prompt := q.Question
	if prompt == "" {
		prompt = q.Header
	}
	return agent.NewQuestion(prompt, false, labels)
}

// userInputAnswer is Codex's answer to a request_user_input: an allow's
// chosen labels for the first question and nothing for the others; a deny
// answers no question, as a user who dismisses them.
func userInputAnswer(p *codexapp.ToolRequestUserInputParams, q *agent.Question, r agent.Resolution) codexapp.ToolRequestUserInputResponse {
	res := codexapp.ToolRequestUserInputResponse{Answers: map[string]codexapp.UserInputAnswer{}}
	if r.Decision != agent.Allow {
		return res
	}
	for i, question := range p.Questions {
		answer := codexapp.UserInputAnswer{Answers: []string{}}
		if i == 0 {
			answer.Answers = append(answer.Answers, q.Labels(r.Answers)...)
		}
		res.Answers[question.ID] = answer
	}
	return res
}
