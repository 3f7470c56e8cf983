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
)

// acpEnv is the environment of a tether acp under test.
func acpEnv(extra ...string) []string {
	return cleanEnv(append([]string{"XDG_STATE_HOME=" + os.TempDir()}, extra...)...)
}

// startACP starts `tether acp` with args behind a Go SDK client, and
// shakes hands.
func startACP(t *testing.T, env []string, args ...string) *acpclient.Client {
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
	if _, err := prompt(ctx, c, "ses_nosuch", "hello"); !isCode(err, -32602) {
		t.Fatalf("a prompt to an unknown session: %v", err)
	}
	testACPMockImages(t, c, s.SessionId)
	return s.SessionId
}

// tinyPNG is a 1x1 PNG.
const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

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
