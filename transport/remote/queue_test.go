package remote

import "testing"

// Result lines end the turns the host opened, wherever their type is;
// conversation lines that merely mention a result end none, and a result
// of no open turn (an interrupt's) leaves the count at zero.
func TestQueueCountsResults(t *testing.T) {
	c := newConn(&Transport{})
	defer c.cancel()
	c.openTurns.Store(2)
	for _, tc := range []struct {
		line string
		want int64
	}{
		{`{"type":"assistant","message":{"content":[{"type":"text","text":"\"result\""}]},"result":1}`, 2},
		{`{"type":"user","message":{"content":"result"},"tool_use_result":{"result":"ok"}}`, 2},
		{`{"type":"result","subtype":"success","is_error":false,"result":"done"}`, 1},
		{`{"subtype":"success","type":"result","result":"done"}`, 0},
		{`{"type":"result","subtype":"success","result":"again"}`, 0},
	} {
		c.queue([]byte(tc.line))
		if got := c.openTurns.Load(); got != tc.want {
			t.Errorf("after %s: open turns %d, want %d", tc.line, got, tc.want)
		}
	}
	if len(c.out) != 5 {
		t.Errorf("%d lines queued, want 5", len(c.out))
	}
}
