package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/internal/testing/acpclient"
	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/fakegemini"
	"github.com/tetherhq/tether/internal/testing/fakehttp"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// realAgentACP is what tether acp --agent kind needs to run the real CLI
// against a fake model server: its environment and the acp arguments, and
// the fake, which records what the CLI asked it.
func realAgentACP(t testing.TB, kind string) (env, args []string, fake modelFake) {
	t.Helper()
	home := t.TempDir()
	args = []string{"--agent", kind, "--data-dir", filepath.Join(t.TempDir(), "acp")}
	slow := 150 * time.Millisecond
	switch kind {
	case "claude":
		cli := testenv.RequireClaudeCLI(t)
		fake, err := fakeanthropic.Start(fakeanthropic.Options{SlowChunkDelay: slow})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fake.Close() })
		return append(testenv.ClaudeEnv(home, fake.URL()), "XDG_STATE_HOME="+t.TempDir()), append(args, "--cli", cli), fake
	case "codex", "opencode":
		fake, err := fakeopenai.Start(fakeopenai.Options{SlowChunkDelay: slow})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fake.Close() })
		var cli string
		if kind == "codex" {
			cli = testenv.RequireCodexCLI(t)
			env, err = testenv.CodexEnv(home, fake.URL())
		} else {
			cli = testenv.RequireOpenCodeCLI(t)
			env, err = testenv.OpenCodeEnv(home, fake.URL(), true)
		}
		if err != nil {
			t.Fatal(err)
		}
		return append(env, "XDG_STATE_HOME="+t.TempDir()), append(args, "--cli", cli), fake
	case "gemini":
		cli := fakegemini.RequireCLI(t)
		fake, err := fakegemini.Start(fakegemini.Options{SlowChunkDelay: slow})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fake.Close() })
		return append(fakegemini.Env(home, fake.URL()), "XDG_STATE_HOME="+t.TempDir()), append(args, "--cli", cli), fake
	}
	t.Fatalf("no agent %s", kind)
	return nil, nil, nil
}

// modelFake is what a test reads of a fake model server: the requests
// the CLI sent it and the images in them.
type modelFake interface {
	Requests() []fakehttp.Request
	Images() []fakehttp.Image
}

// openACP starts tether acp with the real CLI of kind behind it, locally
// or (remote) on a sandboxed runner, and gives it a cwd to work in.
func openACP(t *testing.T, kind string, remote bool) (*acpclient.Client, string, modelFake) {
	env, args, fake := realAgentACP(t, kind)
	if remote {
		p := startServe(t, env, "--sandbox", "on", "--cli", kind+"="+args[len(args)-1])
		env, args = acpEnv("TETHER_AUTH_TOKEN="+testToken), []string{"--agent", kind, "--runner", "http://" + p.addr}
	}
	c := startACP(t, env, args...)
	cwd := filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	return c, cwd, fake
}

// The whole ACP TCK against tether acp with each real CLI behind it,
// locally, against the fake model servers.
func TestRealCLIACPConformanceClaude(t *testing.T)   { realTCK(t, "claude") }
func TestRealCLIACPConformanceCodex(t *testing.T)    { realTCK(t, "codex") }
func TestRealCLIACPConformanceOpenCode(t *testing.T) { realTCK(t, "opencode") }
func TestRealCLIACPConformanceGemini(t *testing.T)   { realTCK(t, "gemini") }

func realTCK(t *testing.T, kind string) {
	t.Parallel() // minutes each, mostly the CLI's start in each of the TCK's processes
	env, args, _ := realAgentACP(t, kind)
	runTCK(t, env, args)
}

// An editor's session with each real CLI behind tether acp: a streamed
// turn, a prompt with an image (the model was sent its bytes), a tool
// call allowed (it ran: its file is there) and rejected (it
// did not), a cancel mid-turn, and a load of the session after another
// took its workspace.
// Through a sandboxed runner the workspace is the runner's, so the tool
// calls are judged by their status, and the load is of the live session
// (the sessions API reopens no ended one).
func TestRealCLIACPClaude(t *testing.T)       { realACPSession(t, "claude", "USE_WRITE ", false) }
func TestRealCLIACPCodex(t *testing.T)        { realACPSession(t, "codex", "USE_SHELL touch ", false) }
func TestRealCLIACPOpenCode(t *testing.T)     { realACPSession(t, "opencode", "USE_SHELL touch ", false) }
func TestRealCLIACPRunnerClaude(t *testing.T) { realACPSession(t, "claude", "USE_WRITE ", true) }
func TestRealCLIACPRunnerCodex(t *testing.T)  { realACPSession(t, "codex", "USE_SHELL touch ", true) }
func TestRealCLIACPRunnerOpenCode(t *testing.T) {
	realACPSession(t, "opencode", "USE_SHELL touch ", true)
}
func TestRealCLIACPGemini(t *testing.T)       { realACPSession(t, "gemini", "USE_SHELL touch ", false) }
func TestRealCLIACPRunnerGemini(t *testing.T) { realACPSession(t, "gemini", "USE_SHELL touch ", true) }

func realACPSession(t *testing.T, kind, makeFile string, remote bool) {
	c, cwd, fake := openACP(t, kind, remote)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := c.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v\n%s", err, c.Stderr.String())
	}
	r, err := prompt(ctx, c, s.SessionId, "SAY hello from "+kind)
	if err != nil || r.StopReason != acp.StopReasonEndTurn || !strings.Contains(text(c.Updates(), false), "hello from "+kind) {
		t.Fatalf("text turn: %+v %v %q\n%s", r, err, text(c.Updates(), false), c.Stderr.String())
	}
	realACPImage(ctx, t, c, s.SessionId, fake.Images)
	for _, tc := range []struct {
		answer acp.PermissionOptionKind
		file   string
		made   bool
	}{{acp.PermissionOptionKindAllowOnce, "allowed.txt", true}, {acp.PermissionOptionKindRejectOnce, "rejected.txt", false}} {
		c.Reset()
		c.Answer(tc.answer)
		path := filepath.Join(cwd, tc.file)
		target := tc.file
		if kind == "claude" && !remote {
			target = path
		}
		r, err := prompt(ctx, c, s.SessionId, makeFile+target)
		if err != nil || r.StopReason != acp.StopReasonEndTurn || len(c.Asked()) == 0 {
			t.Fatalf("%s: %+v %v, asked %d\n%s", tc.answer, r, err, len(c.Asked()), c.Stderr.String())
		}
		if remote {
			want := map[bool]acp.ToolCallStatus{true: acp.ToolCallStatusCompleted, false: acp.ToolCallStatusFailed}[tc.made]
			if st, _ := toolStatus(c.Updates(), "", c.Asked()[0].ToolCall.ToolCallId); st != want {
				t.Fatalf("%s: the tool call ended %q, want %q", tc.answer, st, want)
			}
			continue
		}
		if _, err := os.Stat(path); (err == nil) != tc.made {
			t.Fatalf("%s: %s made: %v, want %v", tc.answer, tc.file, err == nil, tc.made)
		}
	}
	c.Reset()
	done := make(chan acp.StopReason, 1)
	go func() {
		r, err := prompt(ctx, c, s.SessionId, "SLOW")
		if err != nil {
			t.Errorf("SLOW: %v", err)
		}
		done <- r.StopReason
	}()
	if err := c.WaitUpdate(ctx, func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, acp.CancelNotification{SessionId: s.SessionId}); err != nil {
		t.Fatal(err)
	}
	if stop := <-done; stop != acp.StopReasonCancelled {
		t.Fatalf("cancelled turn: %q", stop)
	}
	if !c.CanLoad {
		t.Fatalf("tether acp --agent %s offers no session/load", kind)
	}
	if _, err := c.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("another session/new: %v", err)
	}
	c.Reset()
	if _, err := c.LoadSession(ctx, acp.LoadSessionRequest{SessionId: s.SessionId, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v\n%s", err, c.Stderr.String())
	}
	if got := text(c.Updates(), false); !strings.Contains(got, "hello from "+kind) {
		t.Fatalf("replayed agent text %q", got)
	}
	if r, err := prompt(ctx, c, s.SessionId, "SAY again"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("after the load: %+v %v\n%s", r, err, c.Stderr.String())
	}
}

// The whole ACP TCK with each real CLI on a sandboxed runner behind
// tether acp --runner. Not in CI (each takes minutes): run them with
// -run TestRealCLIACPConformanceRunner.
func TestRealCLIACPConformanceRunnerClaude(t *testing.T)   { realTCKRunner(t, "claude") }
func TestRealCLIACPConformanceRunnerCodex(t *testing.T)    { realTCKRunner(t, "codex") }
func TestRealCLIACPConformanceRunnerOpenCode(t *testing.T) { realTCKRunner(t, "opencode") }
func TestRealCLIACPConformanceRunnerGemini(t *testing.T)   { realTCKRunner(t, "gemini") }

func realTCKRunner(t *testing.T, kind string) {
	if os.Getenv("CI") != "" {
		t.Skip("minutes per agent: run by hand")
	}
	env, args, _ := realAgentACP(t, kind)
	cli := args[len(args)-1]
	p := startServe(t, env, "--sandbox", "on", "--cli", kind+"="+cli)
	runTCK(t, acpEnv("TETHER_AUTH_TOKEN="+testToken), []string{"--agent", kind, "--runner", "http://" + p.addr})
}

// realACPImage prompts with a 1x1 PNG and checks the model was sent it.
func realACPImage(ctx context.Context, t *testing.T, c *acpclient.Client, id acp.SessionId, images func() []fakehttp.Image) {
	t.Helper()
	if !c.TakesImages {
		t.Fatal("tether acp does not declare promptCapabilities.image")
	}
	png, err := base64.StdEncoding.DecodeString(tinyPNG)
	if err != nil {
		t.Fatal(err)
	}
	c.Reset()
	r, err := c.Prompt(ctx, acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock("SAY a pixel"), acp.ImageBlock(tinyPNG, "image/png")}})
	if err != nil || r.StopReason != acp.StopReasonEndTurn || !strings.Contains(text(c.Updates(), false), "a pixel") {
		t.Fatalf("a prompt with an image: %+v %v %q\n%s", r, err, text(c.Updates(), false), c.Stderr.String())
	}
	if !slices.ContainsFunc(images(), func(img fakehttp.Image) bool { return img.MediaType == "image/png" && bytes.Equal(img.Data, png) }) {
		t.Fatalf("the model was sent images %+v, not the prompt's", images())
	}
}
