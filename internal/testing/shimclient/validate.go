// Package shimclient is a client of the adapter-shim API written from the
// backend's side of the contract, not from Tether's code: Validate holds
// each AdapterEvent to the backend's ingest validators (every required
// key, its type and range, UTC timestamps with a Z), and Client drives a
// shim over HTTP and WS /events as the backend does, checking every event
// it reads.
package shimclient

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
)

// isoZ is an ISO-8601 UTC timestamp with a Z, as the backend's
// datetime() accepts (no offset form).
var isoZ = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$`)

var (
	severities   = []string{"warning", "low", "medium", "high", "critical"}
	blastRadii   = []string{"trivial", "small", "medium", "large", "unknown"}
	artKinds     = []string{"code", "document", "design", "config", "test", "other"}
	artStatuses  = []string{"draft", "in_review", "approved", "rejected"}
	phases       = []string{"requested", "running", "completed", "failed"}
	outcomes     = []string{"success", "partial", "abandoned", "max_turns"}
	categories   = []string{"provider", "tool", "model", "timeout", "internal"}
	lifecycleAct = []string{"started", "paused", "resumed", "killed", "crashed", "idle", "session_start", "session_end"}
	// runEnds are the lifecycle actions after which a run sends nothing.
	runEnds = []string{"paused", "killed", "crashed"}
)

// Envelope is one AdapterEvent as the backend reads it.
type Envelope struct {
	SourceEventID    string         `json:"sourceEventId"`
	SourceSequence   int64          `json:"sourceSequence"`
	SourceOccurredAt string         `json:"sourceOccurredAt"`
	RunID            string         `json:"runId"`
	Event            map[string]any `json:"event"`
}

// Type is the event's type, with a decision's subtype after a slash.
func (e Envelope) Type() string {
	t, _ := e.Event["type"].(string)
	if t == "decision" {
		st, _ := e.Event["subtype"].(string)
		return t + "/" + st
	}
	return t
}

// Str is a string field of the event.
func (e Envelope) Str(key string) string { s, _ := e.Event[key].(string); return s }

// Parse reads and validates one frame.
func Parse(frame []byte, agentID string) (Envelope, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(frame, &raw); err != nil {
		return Envelope{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, ok := raw["ingestedAt"]; ok {
		return Envelope{}, fmt.Errorf("a shim must not send ingestedAt")
	}
	var env Envelope
	if err := json.Unmarshal(frame, &env); err != nil {
		return Envelope{}, err
	}
	var seq float64
	if err := json.Unmarshal(raw["sourceSequence"], &seq); err != nil || seq != float64(int64(seq)) {
		return env, fmt.Errorf("sourceSequence %s is not an integer", raw["sourceSequence"])
	}
	return env, Validate(env, agentID)
}

// Validate holds an envelope to the backend's validators.
func Validate(env Envelope, agentID string) error {
	switch {
	case env.SourceEventID == "":
		return fmt.Errorf("sourceEventId is empty")
	case env.SourceSequence < 0:
		return fmt.Errorf("sourceSequence %d < 0", env.SourceSequence)
	case !isoZ.MatchString(env.SourceOccurredAt):
		return fmt.Errorf("sourceOccurredAt %q is not UTC with Z", env.SourceOccurredAt)
	case env.RunID == "":
		return fmt.Errorf("runId is empty")
	case env.Event == nil:
		return fmt.Errorf("no event")
	}
	if err := validateEvent(env.Event); err != nil {
		return fmt.Errorf("%s event: %w", env.Type(), err)
	}
	if got := env.Str("agentId"); agentID != "" && got != agentID {
		return fmt.Errorf("agentId %q is not the connection's %q (the backend drops it)", got, agentID)
	}
	return nil
}

// check is one event's fields as the validators see them.
type check struct {
	ev  map[string]any
	err error
}

func (c *check) fail(format string, a ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, a...)
	}
}

func (c *check) str(key string, nonEmpty bool) string {
	v, ok := c.ev[key]
	s, isStr := v.(string)
	switch {
	case !ok:
		c.fail("%s is missing", key)
	case !isStr:
		c.fail("%s is %T, not a string", key, v)
	case nonEmpty && s == "":
		c.fail("%s is empty", key)
	}
	return s
}

func (c *check) optStr(key string) {
	if v, ok := c.ev[key]; ok {
		if _, isStr := v.(string); !isStr {
			c.fail("%s is %T, not a string", key, v)
		}
	}
}

func (c *check) enum(key string, values []string, required bool) {
	v, ok := c.ev[key]
	if !ok {
		if required {
			c.fail("%s is missing", key)
		}
		return
	}
	if s, isStr := v.(string); !isStr || !slices.Contains(values, s) {
		c.fail("%s %v is not one of %v", key, v, values)
	}
}

func (c *check) boolean(key string) {
	if _, ok := c.ev[key].(bool); !ok {
		c.fail("%s is missing or not a boolean (%v)", key, c.ev[key])
	}
}

func (c *check) number(key string, lo, hi float64, required, nullable bool) {
	v, ok := c.ev[key]
	switch {
	case !ok:
		if required {
			c.fail("%s is missing", key)
		}
		return
	case v == nil:
		if !nullable {
			c.fail("%s is null", key)
		}
		return
	}
	n, isNum := v.(float64)
	if !isNum || n < lo || n > hi {
		c.fail("%s %v is not a number in [%v, %v]", key, v, lo, hi)
	}
}

func (c *check) integer(key string, required bool) {
	v, ok := c.ev[key]
	if !ok {
		if required {
			c.fail("%s is missing", key)
		}
		return
	}
	if n, isNum := v.(float64); !isNum || n != float64(int64(n)) {
		c.fail("%s %v is not an integer", key, v)
	}
}

func (c *check) strings(key string, required bool) {
	v, ok := c.ev[key]
	if !ok {
		if required {
			c.fail("%s is missing", key)
		}
		return
	}
	list, isList := v.([]any)
	if !isList {
		c.fail("%s is %T, not an array", key, v)
		return
	}
	for _, x := range list {
		if _, isStr := x.(string); !isStr {
			c.fail("%s holds %v, not a string", key, x)
		}
	}
}

func (c *check) object(key string, required bool) map[string]any {
	v, ok := c.ev[key]
	if !ok {
		if required {
			c.fail("%s is missing", key)
		}
		return nil
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		c.fail("%s is %T, not an object", key, v)
	}
	return obj
}

func validateEvent(ev map[string]any) error {
	c := &check{ev: ev}
	c.str("agentId", true)
	switch typ := c.str("type", true); typ {
	case "status":
		c.str("message", false)
		c.integer("tick", false)
	case "tool_call":
		c.str("toolCallId", true)
		c.str("toolName", true)
		c.enum("phase", phases, true)
		c.object("input", false)
		c.boolean("approved")
		c.integer("durationMs", false)
	case "decision":
		c.str("decisionId", true)
		c.number("confidence", 0, 1, false, false)
		c.enum("blastRadius", blastRadii, false)
		c.strings("affectedArtifactIds", false)
		if d, ok := ev["dueByTick"]; ok && d != nil {
			c.integer("dueByTick", false)
		}
		switch st := c.str("subtype", true); st {
		case "tool_approval":
			c.str("toolName", true)
			c.object("toolArgs", true)
			c.enum("severity", severities, false)
			c.optStr("reasoning")
		case "option":
			c.str("title", false)
			c.str("summary", false)
			c.enum("severity", severities, true)
			c.number("confidence", 0, 1, true, false)
			c.enum("blastRadius", blastRadii, true)
			c.strings("affectedArtifactIds", true)
			c.boolean("requiresRationale")
			c.optStr("recommendedOptionId")
			opts, ok := ev["options"].([]any)
			if !ok {
				c.fail("options is missing or not an array")
			}
			for _, o := range opts {
				om, ok := o.(map[string]any)
				if !ok {
					c.fail("an option is not an object")
					continue
				}
				oc := &check{ev: om}
				oc.str("id", false)
				oc.str("label", false)
				oc.str("description", false)
				if oc.err != nil {
					c.fail("option: %v", oc.err)
				}
			}
		default:
			c.fail("decision subtype %q", st)
		}
	case "artifact":
		c.str("artifactId", true)
		c.str("name", false)
		c.str("workstream", false)
		c.enum("kind", artKinds, true)
		c.enum("status", artStatuses, true)
		c.number("qualityScore", 0, 1, true, false)
		c.optStr("uri")
		c.optStr("mimeType")
		c.integer("sizeBytes", false)
		if p := c.object("provenance", true); p != nil {
			pc := &check{ev: p}
			pc.str("createdBy", false)
			if at := pc.str("createdAt", false); !isoZ.MatchString(at) {
				pc.fail("provenance.createdAt %q is not UTC with Z", at)
			}
			if pc.err != nil {
				c.fail("provenance: %v", pc.err)
			}
		}
	case "completion":
		c.str("summary", false)
		c.enum("outcome", outcomes, true)
		c.strings("artifactsProduced", true)
		c.strings("decisionsNeeded", true)
		c.optStr("reason")
	case "error":
		c.enum("severity", severities, true)
		c.str("message", false)
		c.boolean("recoverable")
		c.enum("category", categories, true)
		c.optStr("errorCode")
	case "lifecycle":
		c.enum("action", lifecycleAct, true)
		c.optStr("reason")
	case "progress":
		c.str("operationId", false)
		c.str("description", false)
		if _, present := ev["progressPct"]; !present {
			c.fail("progressPct must be present (null or 0..100)")
		}
		c.number("progressPct", 0, 100, false, true)
	default:
		c.fail("unknown event type %q", typ)
	}
	return c.err
}
