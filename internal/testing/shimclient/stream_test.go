package shimclient

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// recorder is a testing.TB that keeps the errors a Stream reports.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Error(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprint(args...))
}

// A run that ended with lifecycle paused, killed or crashed sends nothing
// more: what comes after is reported, and the next run is not.
func TestStreamFlagsEventsAfterARunEnded(t *testing.T) {
	frame := func(run string, seq int, event string) string {
		return fmt.Sprintf(`{"sourceEventId":"%s-%d","sourceSequence":%d,"sourceOccurredAt":"2026-11-25T12:00:00Z","runId":"%s","event":%s}`, run, seq, seq, run, event)
	}
	frames := []string{
		frame("r1", 1, `{"type":"lifecycle","agentId":"a","action":"started"}`),
		frame("r1", 2, `{"type":"lifecycle","agentId":"a","action":"paused"}`),
		frame("r1", 3, `{"type":"completion","agentId":"a","summary":"s","outcome":"abandoned","artifactsProduced":[],"decisionsNeeded":[]}`),
		frame("r2", 1, `{"type":"lifecycle","agentId":"a","action":"resumed"}`),
		frame("r2", 2, `{"type":"status","agentId":"a","message":"working"}`),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		for _, f := range frames {
			if ws.Write(r.Context(), websocket.MessageText, []byte(f)) != nil {
				return
			}
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	rec := &recorder{TB: t}
	s := (&Client{T: rec, Base: srv.URL, AgentID: "a"}).Events("")
	for range frames {
		s.Next(10 * time.Second)
	}
	s.Close()
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "run r1: completion (sequence 3) after lifecycle paused") {
		t.Errorf("reported %q", rec.errs)
	}
}
