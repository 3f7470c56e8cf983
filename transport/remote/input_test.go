package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/transport/remote"
)

// A prompt written into a connection that is already dead (nobody has
// noticed yet) must still reach the agent once the transport reconnects.
func TestInputLostOnDeadConnectionIsResent(t *testing.T) {
	tr := startRunner(t, runnerOpts{scenario: "text", env: map[string]string{mockclaude.EnvN: "3"}})
	px := startProxy(t, tr.addr, 3)
	var health healthLog
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := claude.Connect(ctx, claude.Options{Transport: &remote.Transport{
		URL: px.url(), WorkspaceID: "lossless", ReconnectFor: 30 * time.Second, OnHealth: health.add,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.Query(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	receiveTurn(t, ctx, client, nil)

	px.swallowUp(true)
	if err := client.Query(ctx, "second"); err != nil { // lands in the void
		t.Fatal(err)
	}
	px.swallowUp(false)
	px.killAll()
	health.waitFor(t, 0, remote.Degraded)
	raws := receiveTurn(t, ctx, client, nil)
	if len(raws) == 0 {
		t.Fatal("the second turn never ran")
	}
	// Exactly two turns reached the agent: the resend was not doubled.
	if err := client.Query(ctx, "third"); err != nil {
		t.Fatal(err)
	}
	receiveTurn(t, ctx, client, nil)
	turns := 0
	for _, p := range sdkLines(tr.payloads(client.SessionID())) {
		if payloadType(p) == "result" {
			turns++
		}
	}
	if turns != 3 {
		t.Fatalf("the agent ran %d turns, want 3", turns)
	}
}
