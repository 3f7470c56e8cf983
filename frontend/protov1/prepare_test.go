package protov1_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/runner/workspace"
)

// A live session has logged every frame it sent: a resume that claims to
// have seen more is refused with last_seq_ahead, and the session goes on.
func TestResumeAheadOfTheLog(t *testing.T) {
	tr := startRunner(t, "text", time.Minute)
	c := tr.dial()
	ready := c.open("ahead", nil)
	frames := c.turn("q1")
	last := seqOf(frames[len(frames)-1])

	c2 := tr.dial()
	c2.send(resumeInit("ahead", str(ready, "session_id"), last+50))
	got, st := c2.expectClosed()
	if len(got) != 1 || got[0]["code"] != "last_seq_ahead" || str(got[0], "details") == "" || st != websocket.StatusPolicyViolation {
		t.Fatalf("resume past the log: frames %v, close %v", got, st)
	}
	c.turn("q2")
}

// A workspace whose repository cannot be made: the session opens (its
// agent started meanwhile), but the first query gets an error and ends it
// rather than letting the agent work without its snapshots.
func TestWorkspacePreparationFailure(t *testing.T) {
	tr := startRunner(t, "text", time.Minute)
	planted := filepath.Join(tr.root, "ws", workspace.PrivateDir, "git", "broken.git")
	if err := os.WriteFile(planted, []byte("not a repository"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := tr.dial()
	c.open("broken", nil)
	c.query("q1", "hello")
	f := c.expectError("agent_start_failed")
	if f["request_id"] != "q1" || seqOf(f) == 0 {
		t.Fatalf("error frame %v, want one for q1, logged", f)
	}
	if rest, st := c.expectClosed(); len(rest) != 0 || st != websocket.StatusNormalClosure {
		t.Fatalf("after the error: frames %v, close %v", rest, st)
	}
}
