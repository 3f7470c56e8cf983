package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/internal/testing/acpclient"
	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// acpEnv is the environment of a tether acp under test.
func acpEnv(extra ...string) []string {
	return cleanEnv(append([]string{"XDG_STATE_HOME=" + os.TempDir()}, extra...)...)
}

// startACP starts `tether acp` with args behind a Go SDK client, and
// shakes hands.
func startACP(t testing.TB, env []string, args ...string) *acpclient.Client {
	t.Helper()
	c := acpclient.Start(t, t.TempDir(), env, tetherPath(), append([]string{"acp"}, args...)...)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	init, err := c.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	if err != nil {
		t.Fatalf("initialize: %v\n%s", err, c.Stderr.String())
	}
	if init.ProtocolVersion != acp.ProtocolVersionNumber {
		t.Fatalf("initialize: %+v", init)
	}
	c.CanLoad = init.AgentCapabilities.LoadSession
	c.TakesImages = init.AgentCapabilities.PromptCapabilities.Image
	return c
}

// text is the agent message text of updates.
func text(ns []acp.SessionNotification, user bool) string {
	var b strings.Builder
	for _, n := range ns {
		switch {
		case !user && n.Update.AgentMessageChunk != nil && n.Update.AgentMessageChunk.Content.Text != nil:
			b.WriteString(n.Update.AgentMessageChunk.Content.Text.Text)
		case user && n.Update.UserMessageChunk != nil && n.Update.UserMessageChunk.Content.Text != nil:
			b.WriteString(n.Update.UserMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

// toolStatus is the last status of the tool calls of kind, or of id.
func toolStatus(ns []acp.SessionNotification, kind acp.ToolKind, id acp.ToolCallId) (acp.ToolCallStatus, bool) {
	ids := map[acp.ToolCallId]bool{}
	var status acp.ToolCallStatus
	found := false
	for _, n := range ns {
		if tc := n.Update.ToolCall; tc != nil && (tc.Kind == kind || tc.ToolCallId == id) {
			ids[tc.ToolCallId], status, found = true, tc.Status, true
		}
		if u := n.Update.ToolCallUpdate; u != nil && ids[u.ToolCallId] && u.Status != nil {
			status = *u.Status
		}
	}
	return status, found
}

func prompt(ctx context.Context, c *acpclient.Client, id acp.SessionId, words string) (acp.PromptResponse, error) {
	return c.Prompt(ctx, acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock(words)}})
}

// testACPMock drives the mock behind tether acp as an editor does: a
// streamed turn, a tool call approved and one rejected, a cancel mid-turn.
// Locally a file change shows as a diff read from the workspace;
// through a runner (remote), whose workspace is not here, as the unified
// diff's text.
func testACPMock(t *testing.T, c *acpclient.Client, cwd string, remote bool) acp.SessionId {
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()
	s, err := c.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	r, err := prompt(ctx, c, s.SessionId, "hello")
	if err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("hello: %+v %v", r, err)
	}
	ns := c.Updates()
	if text(ns, false) == "" {
		t.Fatalf("no agent message streamed: %+v", ns)
	}
	if st, ok := toolStatus(ns, acp.ToolKindExecute, ""); !ok || st != acp.ToolCallStatusCompleted {
		t.Fatalf("the command: %v %v", st, ok)
	}
	var diff *acp.ToolCallContentDiff
	diffText := false
	for _, n := range ns {
		if u := n.Update.ToolCallUpdate; u != nil {
			for _, cc := range u.Content {
				if cc.Diff != nil {
					diff = cc.Diff
				}
				if cc.Content != nil && cc.Content.Content.Text != nil && strings.Contains(cc.Content.Content.Text.Text, "@@") {
					diffText = true
				}
			}
		}
	}
	if remote && !diffText {
		t.Fatal("no unified diff as text")
	}
	if !remote && (diff == nil || !filepath.IsAbs(diff.Path) || !strings.Contains(diff.NewText, "hello")) {
		t.Fatalf("no diff with the file's new text: %+v", diff)
	}

	for _, tc := range []struct {
		answer acp.PermissionOptionKind
		want   acp.ToolCallStatus
	}{{acp.PermissionOptionKindAllowOnce, acp.ToolCallStatusCompleted}, {acp.PermissionOptionKindRejectOnce, acp.ToolCallStatusFailed}} {
		c.Reset()
		c.Answer(tc.answer)
		r, err := prompt(ctx, c, s.SessionId, "REQUEST_APPROVAL please")
		if err != nil || r.StopReason != acp.StopReasonEndTurn {
			t.Fatalf("%s: %+v %v", tc.answer, r, err)
		}
		asked := c.Asked()
		if len(asked) != 1 || asked[0].ToolCall.ToolCallId == "" {
			t.Fatalf("%s: permission requests %+v", tc.answer, asked)
		}
		kinds := map[acp.PermissionOptionKind]bool{}
		for _, o := range asked[0].Options {
			kinds[o.Kind] = true
		}
		if !kinds[acp.PermissionOptionKindAllowOnce] || !kinds[acp.PermissionOptionKindRejectOnce] || !kinds[acp.PermissionOptionKindAllowAlways] {
			t.Fatalf("options %+v", asked[0].Options)
		}
		if st, ok := toolStatus(c.Updates(), "", asked[0].ToolCall.ToolCallId); !ok || st != tc.want {
			t.Fatalf("%s: the tool call ended %q (found %v), want %q", tc.answer, st, ok, tc.want)
		}
	}

	c.Reset()
	done := make(chan error, 1)
	var stop acp.StopReason
	go func() {
		r, err := prompt(ctx, c, s.SessionId, "SLOW")
		stop = r.StopReason
		done <- err
	}()
	if err := c.WaitUpdate(ctx, func(u acp.SessionUpdate) bool { return u.ToolCall != nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(ctx, c, s.SessionId, "a second prompt"); !isCode(err, -32600) {
		t.Fatalf("a second prompt while one runs: %v", err)
	}
	if err := c.Cancel(ctx, acp.CancelNotification{SessionId: s.SessionId}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || stop != acp.StopReasonCancelled {
		t.Fatalf("cancelled turn: %q %v", stop, err)
	}
	if r, err := prompt(ctx, c, s.SessionId, "and on"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("after the cancel: %+v %v", r, err)
	}
	r2, err := prompt(ctx, c, s.SessionId, "and on")
	u, _ := r2.Meta["usage"].(map[string]any)
	if out, _ := u["outputTokens"].(float64); err != nil || out == 0 || u["totalTokens"].(float64) < u["inputTokens"].(float64)+out {
		t.Fatalf("a turn's usage: %+v %v", r2.Meta, err)
	}
	// Reject always: the call fails, and the tool's next call in the
	// session is denied without asking the editor.
	for i, answer := range []acp.PermissionOptionKind{acp.PermissionOptionKindRejectAlways, ""} {
		c.Reset()
		c.Answer(answer)
		if r, err := prompt(ctx, c, s.SessionId, "REQUEST_APPROVAL please"); err != nil || r.StopReason != acp.StopReasonEndTurn {
			t.Fatalf("reject always, turn %d: %+v %v", i, r, err)
		}
		if asked := c.Asked(); len(asked) != 1-i {
			t.Fatalf("reject always, turn %d: %d permission requests", i, len(asked))
		}
		var call acp.ToolCallId
		for _, n := range c.Updates() {
			if n.Update.ToolCall != nil {
				call = n.Update.ToolCall.ToolCallId
			}
		}
		if st, ok := toolStatus(c.Updates(), "", call); !ok || st != acp.ToolCallStatusFailed {
			t.Fatalf("reject always, turn %d: the tool call ended %q (found %v)", i, st, ok)
		}
	}
	testACPModes(ctx, t, c, s)
	if _, err := prompt(ctx, c, "ses_nosuch", "hello"); !isCode(err, -32602) {
		t.Fatalf("a prompt to an unknown session: %v", err)
	}
	testACPMockImages(t, c, s.SessionId)
	return s.SessionId
}

// testACPModes switches a session's mode and model as an editor does:
// the session offers the mock's modes and models, a turn in plan mode
// calls no tool, a model set is the one the agent then names, and an
// unknown mode or model is refused while the session goes on.
func testACPModes(ctx context.Context, t *testing.T, c *acpclient.Client, s acp.NewSessionResponse) {
	t.Helper()
	if s.Modes == nil || s.Modes.CurrentModeId != "default" || len(s.Modes.AvailableModes) != 2 || s.Modes.AvailableModes[1].Id != "plan" {
		t.Fatalf("modes %+v", s.Modes)
	}
	if len(s.ConfigOptions) != 1 || s.ConfigOptions[0].Select == nil || s.ConfigOptions[0].Select.Id != "model" || s.ConfigOptions[0].Select.CurrentValue != "default" {
		t.Fatalf("config options %+v", s.ConfigOptions)
	}
	set, err := c.SetSessionConfigOption(ctx, acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{SessionId: s.SessionId, ConfigId: "model", Value: "mock-1"}})
	if err != nil || len(set.ConfigOptions) != 1 || set.ConfigOptions[0].Select.CurrentValue != "mock-1" {
		t.Fatalf("set_config_option model: %+v %v", set, err)
	}
	if _, err := c.SetSessionConfigOption(ctx, acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{SessionId: s.SessionId, ConfigId: "color", Value: "red"}}); !isCode(err, -32602) {
		t.Fatalf("an unknown config option: %v", err)
	}
	if _, err := c.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: s.SessionId, ModeId: "yolo"}); !isCode(err, -32602) {
		t.Fatalf("an unknown mode: %v", err)
	}
	if _, err := c.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: s.SessionId, ModeId: "plan"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UnstableSetSessionModel(ctx, acp.UnstableSetSessionModelRequest{SessionId: s.SessionId, ModelId: "mock-2"}); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	c.Answer(acp.PermissionOptionKindAllowOnce)
	if r, err := prompt(ctx, c, s.SessionId, "REQUEST_APPROVAL in plan mode"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("plan mode: %+v %v", r, err)
	}
	reply := text(c.Updates(), false)
	if len(c.Asked()) != 0 || !strings.Contains(reply, "Plan mode") || !strings.Contains(reply, "Model: mock-2.") {
		t.Fatalf("plan mode asked %d times and replied %q", len(c.Asked()), reply)
	}
	if _, err := c.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: s.SessionId, ModeId: "default"}); err != nil {
		t.Fatal(err)
	}
}

// tinyPNG is a 1x1 PNG, in base64.
const tinyPNG = fakehttp.OnePixelPNGBase64

// testACPMockImages prompts the mock with an image, which its reply
// counts, and with images it cannot take, which are refused as invalid
// params.
func testACPMockImages(t *testing.T, c *acpclient.Client, id acp.SessionId) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if !c.TakesImages {
		t.Fatal("tether acp --agent mock does not declare promptCapabilities.image")
	}
	withImage := func(data, mimeType string) acp.PromptRequest {
		return acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock("what is this?"), acp.ImageBlock(data, mimeType)}}
	}
	c.Reset()
	r, err := c.Prompt(ctx, withImage(tinyPNG, "image/png"))
	if err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("a prompt with an image: %+v %v", r, err)
	}
	if got, want := text(c.Updates(), false), "You sent 1 image (image/png 70 bytes)."; !strings.Contains(got, want) {
		t.Fatalf("the reply %q does not say %q", got, want)
	}
	for name, req := range map[string]acp.PromptRequest{
		"not base64": withImage("not base64!", "image/png"),
		"an svg":     withImage("PHN2Zy8+", "image/svg+xml"),
		"no data":    withImage("", "image/png"),
		"no text":    {SessionId: id, Prompt: []acp.ContentBlock{acp.ImageBlock(tinyPNG, "image/png")}},
	} {
		if _, err := c.Prompt(ctx, req); !isCode(err, -32602) {
			t.Errorf("%s: %v, want invalid params", name, err)
		}
	}
}

func isCode(err error, code int) bool {
	var re *acp.RequestError
	return errors.As(err, &re) && re.Code == code
}

func TestACPMockLocal(t *testing.T) {
	data := filepath.Join(t.TempDir(), "acp")
	cwd := filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	c := startACP(t, acpEnv(), "--agent", "mock", "--data-dir", data)
	id := testACPMock(t, c, cwd, false)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	// Another session in the cwd closes the idle one; a load takes it
	// back, with its history, and it goes on.
	if _, err := c.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("a second session/new: %v", err)
	}
	c.Reset()
	if _, err := c.LoadSession(ctx, acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v\n%s", err, c.Stderr.String())
	}
	if got := text(c.Updates(), true); !strings.Contains(got, "hello") || !strings.Contains(got, "REQUEST_APPROVAL") {
		t.Fatalf("replayed user messages %q", got)
	}
	if text(c.Updates(), false) == "" {
		t.Fatal("no agent message replayed")
	}
	if r, err := prompt(ctx, c, id, "after the load"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("a prompt after the load: %+v %v\n%s", r, err, c.Stderr.String())
	}
	if err := c.Stop(waitLimit); err != nil {
		t.Fatalf("tether acp at its stdin's end: %v\n%s", err, c.Stderr.String())
	}

	// The editor again: both sessions are listed, newest first.
	c = startACP(t, acpEnv(), "--agent", "mock", "--data-dir", data)
	list, err := c.ListSessions(ctx, acp.ListSessionsRequest{Cwd: &cwd})
	if err != nil || len(list.Sessions) != 2 || list.Sessions[1].SessionId != id || list.Sessions[0].Cwd != cwd {
		t.Fatalf("session/list after a restart: %+v %v", list, err)
	}
}

// One tether acp serves workspaces under several parent directories, as
// an editor with several projects open asks: each session works in its
// own cwd (two of them named alike), methods that name only the session
// find it, and session/list gives each its cwd.
func TestACPMockSeveralRoots(t *testing.T) {
	c := startACP(t, acpEnv(), "--agent", "mock", "--data-dir", filepath.Join(t.TempDir(), "acp"))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var cwds []string
	ids := map[acp.SessionId]string{}
	for range 2 {
		cwd := filepath.Join(t.TempDir(), "proj")
		if err := os.Mkdir(cwd, 0o755); err != nil {
			t.Fatal(err)
		}
		s, err := c.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
		if err != nil {
			t.Fatalf("session/new in %s: %v", cwd, err)
		}
		cwds, ids[s.SessionId] = append(cwds, cwd), cwd
	}
	for id, cwd := range ids {
		if r, err := prompt(ctx, c, id, "hello "+cwd); err != nil || r.StopReason != acp.StopReasonEndTurn {
			t.Fatalf("a turn in %s: %+v %v", cwd, r, err)
		}
		if _, err := os.Stat(filepath.Join(cwd, "mock-notes.md")); err != nil {
			t.Fatalf("the turn in %s wrote nothing there: %v", cwd, err)
		}
	}
	all, err := c.ListSessions(ctx, acp.ListSessionsRequest{})
	if err != nil || len(all.Sessions) != 2 {
		t.Fatalf("session/list: %+v %v", all, err)
	}
	for _, s := range all.Sessions {
		if ids[s.SessionId] != s.Cwd {
			t.Fatalf("session %s listed in %s, made in %s", s.SessionId, s.Cwd, ids[s.SessionId])
		}
	}
	one, err := c.ListSessions(ctx, acp.ListSessionsRequest{Cwd: &cwds[1]})
	if err != nil || len(one.Sessions) != 1 || one.Sessions[0].Cwd != cwds[1] {
		t.Fatalf("session/list in %s: %+v %v", cwds[1], one, err)
	}
}

func TestACPMockRunner(t *testing.T) {
	p := startServe(t, cleanEnv(), "--sandbox", "on")
	c := startACP(t, acpEnv("TETHER_AUTH_TOKEN="+testToken), "--agent", "mock", "--runner", "http://"+p.addr)
	cwd := filepath.Join(t.TempDir(), "proj")
	id := testACPMock(t, c, cwd, true)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	// Another session in the cwd closes the idle one on the runner; a
	// load starts it again there (the runner's resume), with its history.
	if _, err := c.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("a second session/new: %v", err)
	}
	c.Reset()
	if _, err := c.LoadSession(ctx, acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v\n%s", err, c.Stderr.String())
	}
	if got := text(c.Updates(), true); !strings.Contains(got, "hello") {
		t.Fatalf("replayed user messages %q", got)
	}
	if r, err := prompt(ctx, c, id, "after the load"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("a prompt after the load: %+v %v\n%s", r, err, c.Stderr.String())
	}
}
