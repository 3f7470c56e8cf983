package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/fakegemini"
	"github.com/tetherhq/tether/internal/testing/shimclient"
)

// tether shim --agent gemini, Gemini CLI against a fake Gemini API: a
// spawned run completes with the model's reply, and its checkpoint is the
// backend's gemini member, carrying Gemini's own session id.
func TestRealCLIShimGemini(t *testing.T) {
	cli := fakegemini.RequireCLI(t)
	fake, err := fakegemini.Start(fakegemini.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	dir := t.TempDir()
	child := shimclient.Launch(t, fakegemini.Env(t.TempDir(), fake.URL()), `{"backendUrl":"http://127.0.0.1:9","agentId":"g1"}`, tetherPath(),
		"shim", "--agent", "gemini", "--cli", cli, "--workspace", filepath.Join(dir, "ws"), "--data-dir", filepath.Join(t.TempDir(), "data"))
	c := &shimclient.Client{T: t, Base: "http://localhost:" + strconv.Itoa(child.Port), AgentID: "g1"}
	events := c.Events("")
	c.Must(200, "POST", "/spawn", map[string]any{"agentId": "g1", "role": "r", "description": "SAY hello from the gemini shim", "workstream": "w",
		"projectBrief": map[string]any{"title": "t", "description": "d"}}, nil)
	done := events.Until("completion", 90*time.Second)
	if last := done[len(done)-1]; last.Str("outcome") != "success" || !strings.Contains(last.Str("summary"), "hello from the gemini shim") {
		t.Fatalf("completion %+v\n%s", last.Event, child.Stderr())
	}
	var cp struct {
		Checkpoint struct {
			SDK          string `json:"sdk"`
			SessionID    string `json:"sessionId"`
			RunStateJSON string `json:"runStateJson"`
		} `json:"checkpoint"`
	}
	c.Must(200, "POST", "/checkpoint", map[string]any{"decisionId": ""}, &cp)
	events.Close()
	if cp.Checkpoint.SDK != "gemini" || cp.Checkpoint.SessionID == "" || cp.Checkpoint.RunStateJSON != "" {
		t.Fatalf("checkpoint %+v", cp)
	}
}
