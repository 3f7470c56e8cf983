package e2e

import (
	"testing"

	"github.com/tetherhq/tether/claude"
)

// SessionID is known as soon as Connect returns — a host files the session
// away before its first message — and it is the id the CLI then uses: for
// a new session, a resumed one, a fork, and a session on a runner.
func TestRealCLISessionIDKnownAtConnect(t *testing.T) {
	timed(t)
	t.Run("Local", func(t *testing.T) {
		opts, _ := localTarget(t).opts(t)
		id := connectedID(t, opts, "")
		opts.Resume = id
		connectedID(t, opts, id)
		opts.ForkSession = true
		if fork := connectedID(t, opts, ""); fork == id {
			t.Errorf("the fork kept the original's id %s", id)
		}
	})
	t.Run("Runner", func(t *testing.T) {
		opts, _ := runnerTarget(startRunner(t, true)).opts(t)
		id := connectedID(t, opts, "")
		opts.Resume = id
		connectedID(t, opts, id)
	})
}

// connectedID connects, checks SessionID before and after one turn (and
// against want, if set), and returns it.
func connectedID(t *testing.T, opts claude.Options, want string) string {
	t.Helper()
	ctx := testCtx(t)
	c, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := c.SessionID()
	if id == "" || (want != "" && id != want) {
		t.Fatalf("SessionID after Connect = %q, want %q", id, want)
	}
	if err := c.Query(ctx, "SAY hello"); err != nil {
		t.Fatal(err)
	}
	res, err := claude.FinalResult(c.Receive(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID != id || c.SessionID() != id {
		t.Fatalf("SessionID %q at Connect, the CLI used %q (client says %q)", id, res.SessionID, c.SessionID())
	}
	return id
}
