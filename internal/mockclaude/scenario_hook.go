package mockclaude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// hookTurn proposes `Bash echo hi`, sends a hook_callback control request
// for every PreToolUse callback id registered in initialize whose matcher
// matches Bash, and reports each answer in the final assistant text
// ("hook <id> returned <json>" or "hook <id> failed: <error>"). A "deny" or
// "block" answer turns the tool result into an error.
func hookTurn(t *turn) error {
	c, err := t.newCall()
	if err != nil {
		return err
	}
	if _, err := c.text([]string{"I'll run ", "a command."}); err != nil {
		return err
	}
	toolID := t.s.ids.token("toolu_mock_")
	toolInput := json.RawMessage(`{"command":"echo hi"}`)
	if err := c.toolUse(toolID, "Bash", json.RawMessage(`{"command":"echo hi","description":"Print hi"}`)); err != nil {
		return err
	}
	if err := c.end("tool_use"); err != nil {
		return err
	}

	ids := t.s.hookCallbackIDs("PreToolUse", "Bash")
	var reports []string
	var blocked string
	for _, id := range ids {
		body, err := t.request(map[string]any{
			"subtype":     "hook_callback",
			"callback_id": id,
			"input": map[string]any{
				"session_id":      t.s.sessionID,
				"transcript_path": filepath.Join(t.s.cwd, ".claude", "mock-transcripts", t.s.sessionID+".jsonl"),
				"cwd":             t.s.cwd,
				"permission_mode": t.s.permissionMode(),
				"hook_event_name": "PreToolUse",
				"tool_name":       "Bash",
				"tool_input":      toolInput,
				"tool_use_id":     toolID,
			},
			"tool_use_id": toolID,
		})
		if err != nil {
			var se *sdkError
			if !errors.As(err, &se) && !errors.Is(err, errStreamClosed) {
				return err
			}
			reports = append(reports, fmt.Sprintf("hook %s failed: %v", id, err))
			continue
		}
		reports = append(reports, fmt.Sprintf("hook %s returned %s", id, compactJSON(body)))
		if reason, ok := hookBlocks(body); ok && blocked == "" {
			blocked = reason
		}
	}

	if blocked != "" {
		if err := t.toolResult(toolID, blocked, ptr(true), "Error: "+blocked); err != nil {
			return err
		}
	} else {
		out := bashResult{Stdout: "hi"}
		if err := t.toolResult(toolID, "hi", ptr(false), out); err != nil {
			return err
		}
	}
	final := "No PreToolUse hooks are registered for Bash."
	if len(reports) > 0 {
		final = "PreToolUse hooks: " + strings.Join(reports, "; ")
	}
	text, err := t.reply([]string{final})
	if err != nil {
		return err
	}
	return t.success(text)
}

// bashResult is the structured tool_use_result of Bash.
type bashResult struct {
	Stdout           string `json:"stdout"`
	Stderr           string `json:"stderr"`
	Interrupted      bool   `json:"interrupted"`
	IsImage          bool   `json:"isImage"`
	NoOutputExpected bool   `json:"noOutputExpected"`
}

// hookCallbackIDs lists the callback ids registered in initialize for event
// whose matcher matches tool (an empty or "*" matcher matches everything;
// otherwise it is an anchored regular expression such as "Bash|Edit").
func (s *session) hookCallbackIDs(event, tool string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.initReq == nil {
		return nil
	}
	var ids []string
	for _, m := range s.initReq.Hooks[event] {
		if m.Matcher != "" && m.Matcher != "*" {
			re, err := regexp.Compile("^(?:" + m.Matcher + ")$")
			if err != nil || !re.MatchString(tool) {
				continue
			}
		}
		ids = append(ids, m.HookCallbackIDs...)
	}
	return ids
}

// hookBlocks reports whether a hook output denies the tool, and why.
func hookBlocks(body json.RawMessage) (string, bool) {
	var out struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
		Specific struct {
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if json.Unmarshal(body, &out) != nil {
		return "", false
	}
	switch {
	case out.Specific.PermissionDecision == "deny":
		return "Blocked by PreToolUse hook: " + out.Specific.PermissionDecisionReason, true
	case out.Decision == "block":
		return "Blocked by PreToolUse hook: " + out.Reason, true
	}
	return "", false
}

func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
