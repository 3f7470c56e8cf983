package mockclaude

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const (
	demoFile     = "hello.txt" // the file the demo writes in Cwd
	promptBudget = 200         // runes of the prompt echoed in replies
)

// demoTurn is what `tether run --mock` shows: a streamed friendly reply
// echoing the prompt, a Write tool call for hello.txt that goes through the
// permission flow, and a closing text. num_turns is 2 (two model calls).
func demoTurn(t *turn) error {
	said := echo(t.prompt)
	c, err := t.newCall()
	if err != nil {
		return err
	}
	intro := fmt.Sprintf("Hi! I'm the mock Claude that ships with tether, so this runs without an API key or network. You said: %s. Let me show you a tool call by writing %s in your working directory.", said, demoFile)
	if _, err := c.text(chunkWords(intro, 8)); err != nil {
		return err
	}
	toolID := t.s.ids.token("toolu_mock_")
	path := filepath.Join(t.s.cwd, demoFile)
	input, err := marshal(writeInput{FilePath: path, Content: "Hello from the tether mock!\nYou said: " + said + "\n"})
	if err != nil {
		return err
	}
	if err := c.toolUse(toolID, "Write", input); err != nil {
		return err
	}
	if err := c.end("tool_use"); err != nil {
		return err
	}

	perm, err := t.permit("Write", toolID, input, demoFile)
	if err != nil {
		return err
	}
	var final string
	if perm.allow {
		text, detail, werr := t.s.writeFile(perm.input)
		if werr != nil {
			msg := "<tool_use_error>" + werr.Error() + "</tool_use_error>"
			if err := t.toolResult(toolID, msg, ptr(true), "Error: "+werr.Error()); err != nil {
				return err
			}
			final = fmt.Sprintf("The write failed: %v. Nothing else to do here; this was the tether mock.", werr)
		} else {
			if err := t.toolResult(toolID, text, nil, detail); err != nil {
				return err
			}
			final = fmt.Sprintf("Done! I wrote %s. Everything you just saw came from tether's built-in mock of the Claude CLI: streaming text, a tool call and a permission check.", writtenPath(perm.input))
		}
	} else {
		t.deny("Write", toolID, input)
		if err := t.toolResult(toolID, perm.message, ptr(true), "Error: "+perm.message); err != nil {
			return err
		}
		if perm.interrupt {
			t.inTool = true
			return errInterrupted
		}
		final = fmt.Sprintf("I couldn't write %s: %s. That's fine: this was tether's built-in mock showing how permission checks work.", demoFile, perm.message)
	}
	text, err := t.reply(chunkWords(final, 4))
	if err != nil {
		return err
	}
	return t.success(text)
}

// echo quotes the prompt for a reply, shortened to promptBudget runes.
func echo(prompt string) string {
	r := []rune(strings.TrimSpace(prompt))
	if len(r) == 0 {
		return "(an empty message)"
	}
	if len(r) > promptBudget {
		return fmt.Sprintf("%q…", string(r[:promptBudget]))
	}
	return fmt.Sprintf("%q", string(r))
}

type writeInput struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

func writtenPath(input json.RawMessage) string {
	var in writeInput
	_ = json.Unmarshal(input, &in)
	return in.FilePath
}

// writeResult is the structured tool_use_result of Write.
type writeResult struct {
	Type            string  `json:"type"`
	FilePath        string  `json:"filePath"`
	Content         string  `json:"content"`
	StructuredPatch []any   `json:"structuredPatch"`
	OriginalFile    *string `json:"originalFile"`
	UserModified    bool    `json:"userModified"`
}

// permission is the outcome of asking whether a tool may run.
type permission struct {
	allow     bool
	input     json.RawMessage // the input to run with (updatedInput if given)
	message   string          // why it was denied
	interrupt bool            // deny also stops the turn
}

// permit decides whether an editing tool may run, like the CLI: the
// acceptEdits and bypassPermissions modes allow it; otherwise the SDK is
// asked with can_use_tool when --permission-prompt-tool stdio was given;
// otherwise it is denied.
func (t *turn) permit(tool, toolUseID string, input json.RawMessage, description string) (permission, error) {
	switch t.s.permissionMode() {
	case "acceptEdits", "bypassPermissions":
		return permission{allow: true, input: input}, nil
	}
	if t.s.opts.permissionPromptTool != "stdio" {
		msg := fmt.Sprintf("Claude requested permissions to write to %s, but you haven't granted it yet.", writtenPath(input))
		return permission{message: msg}, nil
	}
	body, err := t.request(map[string]any{
		"subtype":                "can_use_tool",
		"tool_name":              tool,
		"display_name":           tool,
		"input":                  input,
		"description":            description,
		"permission_suggestions": []map[string]string{{"type": "setMode", "mode": "acceptEdits", "destination": "session"}},
		"tool_use_id":            toolUseID,
	})
	if err != nil {
		var se *sdkError
		if errors.As(err, &se) || errors.Is(err, errStreamClosed) {
			return permission{message: "Tool permission request failed: Error: " + err.Error()}, nil
		}
		return permission{}, err
	}
	var ans struct {
		Behavior           string          `json:"behavior"`
		UpdatedInput       json.RawMessage `json:"updatedInput"`
		Message            string          `json:"message"`
		Interrupt          bool            `json:"interrupt"`
		UpdatedPermissions []struct {
			Type        string `json:"type"`
			Mode        string `json:"mode"`
			Destination string `json:"destination"`
		} `json:"updatedPermissions"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return permission{message: "Tool permission request failed: invalid response: " + err.Error()}, nil
	}
	switch ans.Behavior {
	case "allow":
		for _, u := range ans.UpdatedPermissions {
			if u.Type == "setMode" && validPermissionMode(u.Mode) {
				t.s.setPermissionMode(u.Mode)
			}
		}
		in := input
		if len(ans.UpdatedInput) > 0 && string(ans.UpdatedInput) != "null" {
			in = ans.UpdatedInput
		}
		return permission{allow: true, input: in}, nil
	case "deny":
		msg := ans.Message
		if msg == "" {
			msg = "Permission denied"
		}
		return permission{message: msg, interrupt: ans.Interrupt}, nil
	default:
		return permission{message: fmt.Sprintf("Tool permission request failed: unknown behavior %q", ans.Behavior)}, nil
	}
}

// writeFile runs the Write tool inside Cwd and returns the tool_result text
// and the structured tool_use_result. Paths outside Cwd (including through
// symlinks) are refused.
func (s *session) writeFile(input json.RawMessage) (string, any, error) {
	var in writeInput
	if err := json.Unmarshal(input, &in); err != nil {
		return "", nil, fmt.Errorf("invalid Write input: %v", err)
	}
	if in.FilePath == "" {
		return "", nil, errors.New("file_path is required")
	}
	p := in.FilePath
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.cwd, p)
	}
	p = filepath.Clean(p)
	if err := s.insideCwd(p); err != nil {
		return "", nil, err
	}
	original, readErr := os.ReadFile(p)
	existed := readErr == nil
	if err := os.WriteFile(p, []byte(in.Content), 0o644); err != nil {
		return "", nil, err
	}
	if !existed {
		s.mu.Lock()
		s.created = append(s.created, p)
		s.mu.Unlock()
		text := fmt.Sprintf("File created successfully at: %s (file state is current in your context — no need to Read it back)", p)
		return text, writeResult{Type: "create", FilePath: p, Content: in.Content, StructuredPatch: []any{}}, nil
	}
	text := fmt.Sprintf("The file %s has been updated successfully.", p)
	return text, writeResult{Type: "update", FilePath: p, Content: in.Content, StructuredPatch: []any{}, OriginalFile: ptr(string(original))}, nil
}

// insideCwd refuses p unless it names a regular file (or nothing) whose
// real parent directory is Cwd or below it.
func (s *session) insideCwd(p string) error {
	outside := fmt.Errorf("refusing to write %s: it is outside the working directory %s", p, s.cwd)
	if !within(s.cwd, p) {
		return outside
	}
	if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("refusing to write %s: not a regular file", p)
	}
	realCwd, err := filepath.EvalSymlinks(s.cwd)
	if err != nil {
		return err
	}
	realDir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return err
	}
	if !within(realCwd, filepath.Join(realDir, filepath.Base(p))) {
		return outside
	}
	return nil
}

func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == "." {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
