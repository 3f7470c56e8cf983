package protov1_test

import (
	"math"
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
	if f["request_id"] != "q1" {
		t.Fatalf("error frame %v, want one for q1", f)
	}
	if rest, st := c.expectClosed(); len(rest) != 0 || st != websocket.StatusNormalClosure {
		t.Fatalf("after the error: frames %v, close %v", rest, st)
	}
}

// A resume's last_seq is any uint64 a host sends: at or before the
// session's last frame it resumes after it, past it it is refused with
// last_seq_ahead; nothing wraps, and the session goes on.
func FuzzResumeLastSeq(f *testing.F) {
	tr := startRunner(f, "text", time.Minute)
	c := tr.dial()
	ready := c.open("fuzz", nil)
	frames := c.turn("q1")
	last := seqOf(frames[len(frames)-1])
	c.ws.CloseNow()
	for _, n := range []uint64{0, 1, last - 1, last, last + 1, 1 << 63, 1<<63 - 1, math.MaxUint64 - 1, math.MaxUint64} {
		f.Add(n)
	}
	id := str(ready, "session_id")
	f.Fuzz(func(t *testing.T, lastSeq uint64) {
		c := tr.dialFor(t)
		c.send(resumeInit("fuzz", id, lastSeq))
		first := c.next()
		switch {
		case lastSeq > last:
			if first["type"] != "error" || first["code"] != "last_seq_ahead" {
				t.Fatalf("last_seq %d past %d: %v", lastSeq, last, first)
			}
		case first["type"] != "ready" || seqOf(first) != last:
			t.Fatalf("last_seq %d of %d: %v", lastSeq, last, first)
		}
	})
}
