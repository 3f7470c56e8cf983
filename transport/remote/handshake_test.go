package remote_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/transport/remote"
)

// After a runner restart the agent is a new process: the handshake (the
// SDK's initialize, with its hook ids) must reach it again, or the host's
// hooks silently stop running.
func TestHooksSurviveRunnerRestart(t *testing.T) {
	opts := runnerOpts{scenario: "hook"}
	tr := startRunner(t, opts)
	px := startProxy(t, tr.addr, 2)
	var health healthLog
	var calls atomic.Int32
	hook := func(context.Context, claude.HookInput) (claude.HookOutput, error) {
		calls.Add(1)
		return claude.HookOutput{}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := claude.Connect(ctx, claude.Options{
		Transport: &remote.Transport{URL: px.url(), WorkspaceID: "hooked", ReconnectFor: 30 * time.Second, OnHealth: health.add},
		Hooks:     map[string][]claude.HookMatcher{"PreToolUse": {{Matcher: "Bash", Hooks: []claude.HookFunc{hook}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	turn := func(prompt string) string {
		if err := client.Query(ctx, prompt); err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		receiveTurn(t, ctx, client, func(m claude.Message) {
			if a, ok := m.(*claude.AssistantMessage); ok {
				text.WriteString(a.Message.Content.Text())
			}
		})
		return text.String()
	}
	if got := turn("before"); calls.Load() != 1 || !strings.Contains(got, "hook_0 returned") {
		t.Fatalf("before the restart: %d hook calls, text %q", calls.Load(), got)
	}
	tr.stop()
	health.waitFor(t, 0, remote.Degraded)
	opts.dir = tr.root
	tr2 := startRunner(t, opts)
	px.setTarget(tr2.addr)
	health.waitFor(t, 1, remote.Healthy)
	if got := turn("after"); calls.Load() != 2 || !strings.Contains(got, "hook_0 returned") {
		t.Fatalf("after the restart: %d hook calls in all, text %q", calls.Load(), got)
	}
}
