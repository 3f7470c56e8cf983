package shimclient

import (
	"strings"
	"testing"
)

// The validators refuse what the backend's ingest quarantines, each for
// its reason, and take the events the reference documents as valid.
func TestValidateAsTheBackend(t *testing.T) {
	env := func(event string) string {
		return `{"sourceEventId":"e1","sourceSequence":1,"sourceOccurredAt":"2026-11-25T12:00:00.000000Z","runId":"r1","event":` + event + `}`
	}
	valid := []string{
		env(`{"type":"status","agentId":"a","message":"hi"}`),
		env(`{"type":"tool_call","agentId":"a","toolCallId":"t","toolName":"Bash","phase":"requested","input":{},"approved":true}`),
		env(`{"type":"decision","subtype":"option","agentId":"a","decisionId":"d","title":"t","summary":"s","severity":"medium","confidence":0.5,"blastRadius":"unknown","options":[{"id":"o","label":"l","description":"d"}],"affectedArtifactIds":[],"requiresRationale":false}`),
		env(`{"type":"progress","agentId":"a","operationId":"o","description":"d","progressPct":null}`),
		env(`{"type":"completion","agentId":"a","summary":"s","outcome":"success","artifactsProduced":[],"decisionsNeeded":[]}`),
	}
	for _, v := range valid {
		if _, err := Parse([]byte(v), "a"); err != nil {
			t.Errorf("refused a valid event: %v\n%s", err, v)
		}
	}
	invalid := map[string]string{
		"offset timestamp":            strings.Replace(env(`{"type":"status","agentId":"a","message":"hi"}`), "Z\"", "+00:00\"", 1),
		"another agent":               env(`{"type":"status","agentId":"b","message":"hi"}`),
		"tool_call without approved":  env(`{"type":"tool_call","agentId":"a","toolCallId":"t","toolName":"Bash","phase":"requested"}`),
		"option without affected ids": env(`{"type":"decision","subtype":"option","agentId":"a","decisionId":"d","title":"t","summary":"s","severity":"medium","confidence":0.5,"blastRadius":"unknown","options":[],"requiresRationale":false}`),
		"progress without its pct":    env(`{"type":"progress","agentId":"a","operationId":"o","description":"d"}`),
		"pct over 100":                env(`{"type":"progress","agentId":"a","operationId":"o","description":"d","progressPct":101}`),
		"completion without needed":   env(`{"type":"completion","agentId":"a","summary":"s","outcome":"success","artifactsProduced":[]}`),
		"confidence over 1":           env(`{"type":"decision","subtype":"tool_approval","agentId":"a","decisionId":"d","toolName":"x","toolArgs":{},"confidence":2}`),
		"unknown lifecycle":           env(`{"type":"lifecycle","agentId":"a","action":"napping"}`),
		"no run":                      strings.Replace(env(`{"type":"status","agentId":"a","message":"hi"}`), `"runId":"r1"`, `"runId":""`, 1),
		"ingestedAt sent":             strings.Replace(env(`{"type":"status","agentId":"a","message":"hi"}`), `{`, `{"ingestedAt":"x",`, 1),
	}
	for name, v := range invalid {
		if _, err := Parse([]byte(v), "a"); err == nil {
			t.Errorf("%s: accepted\n%s", name, v)
		}
	}
}
