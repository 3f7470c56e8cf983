package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// Claude Code's modes and models from an editor, the real CLI behind tether
// acp against the fake Anthropic API, locally and through a sandboxed
// runner: in acceptEdits the CLI writes a file without asking, and the
// model an editor switches to is the one the CLI's next request names.
func TestRealCLIACPClaudeModes(t *testing.T)       { realACPClaudeModes(t, false) }
func TestRealCLIACPRunnerClaudeModes(t *testing.T) { realACPClaudeModes(t, true) }

func realACPClaudeModes(t *testing.T, remote bool) {
	c, cwd, fake := openACP(t, "claude", remote)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := c.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v\n%s", err, c.Stderr.String())
	}
	if s.Modes == nil || s.Modes.CurrentModeId != "default" || len(s.ConfigOptions) != 1 {
		t.Fatalf("session/new: modes %+v config options %+v", s.Modes, s.ConfigOptions)
	}
	if _, err := c.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: s.SessionId, ModeId: "acceptEdits"}); err != nil {
		t.Fatalf("set_mode: %v\n%s", err, c.Stderr.String())
	}
	target := "edited.txt"
	if !remote {
		target = filepath.Join(cwd, target)
	}
	c.Answer(acp.PermissionOptionKindRejectOnce) // were it asked, the write would not happen
	if r, err := prompt(ctx, c, s.SessionId, "USE_WRITE "+target); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("a write in acceptEdits: %+v %v\n%s", r, err, c.Stderr.String())
	}
	if n := len(c.Asked()); n != 0 {
		t.Fatalf("acceptEdits asked %d times", n)
	}
	if !remote {
		if _, err := os.Stat(target); err != nil {
			t.Fatalf("the file of the write: %v", err)
		}
	}

	const model = "claude-tether-switched"
	if _, err := c.SetSessionConfigOption(ctx, acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{
		SessionId: s.SessionId, ConfigId: "model", Value: model}}); err != nil {
		t.Fatalf("set_config_option model: %v\n%s", err, c.Stderr.String())
	}
	before := len(fake.Requests())
	if r, err := prompt(ctx, c, s.SessionId, "SAY switched"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("after set_model: %+v %v\n%s", r, err, c.Stderr.String())
	}
	var models []string
	for _, r := range fake.Requests()[before:] {
		var body struct {
			Model string `json:"model"`
		}
		if strings.HasPrefix(r.Path, "/v1/messages") && json.Unmarshal(r.Body, &body) == nil && body.Model != "" {
			models = append(models, body.Model)
		}
	}
	t.Logf("models asked after set_model: %q", models)
	found := false
	for _, m := range models {
		found = found || m == model
	}
	if !found {
		t.Fatalf("the turn after set_model asked the models %q, not %q", models, model)
	}
}
