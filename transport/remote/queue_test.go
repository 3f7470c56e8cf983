package remote

import (
	"testing"

	v1 "github.com/tetherhq/tether/protocol/runnerv1"
)

// The runner's done frames end the turns the host opened; lines, result
// lines too, end none by themselves; a done of no open turn (an
// interrupt's) leaves the count at zero; a done seen already counts once.
func TestDoneFramesEndTurns(t *testing.T) {
	c := newConn(&Transport{})
	defer c.cancel()
	c.openTurns.Store(2)
	for _, tc := range []struct {
		frame v1.Frame
		want  int64
	}{
		{v1.Message{Seq: 1, Line: []byte(`{"type":"assistant","message":{"content":[]}}`)}, 2},
		{v1.Message{Seq: 2, Line: []byte(`{"type":"result","subtype":"success","is_error":false}`)}, 2},
		{v1.Done{Seq: 3, Reason: "completed"}, 1},
		{v1.Done{Seq: 3, Reason: "completed"}, 1},
		{v1.Done{Seq: 4, Reason: "completed"}, 0},
		{v1.Done{Seq: 5, Reason: "completed"}, 0},
	} {
		if err := c.handle(tc.frame); err != nil {
			t.Fatal(err)
		}
		if got := c.openTurns.Load(); got != tc.want {
			t.Errorf("after %#v: open turns %d, want %d", tc.frame, got, tc.want)
		}
	}
	if len(c.out) != 2 {
		t.Errorf("%d lines queued, want 2", len(c.out))
	}
}
