package claudecli

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// stillLink is a link whose CLI says nothing of its own: the test pushes
// its messages as the SDK's reader would.
type stillLink struct{}

func (stillLink) sessionID() string { return "s-1" }
func (stillLink) messages(context.Context) iter.Seq2[claude.Message, error] {
	return func(func(claude.Message, error) bool) {}
}
func (stillLink) send(context.Context, claude.UserInput) error { return nil }
func (stillLink) interrupt(context.Context) error              { return nil }
func (stillLink) control(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, nil
}
func (stillLink) err() error   { return nil }
func (stillLink) close() error { return nil }

func assistantText(t *testing.T, id, text string) claude.Message {
	t.Helper()
	line, _ := json.Marshal(map[string]any{"type": "assistant", "session_id": "s-1", "parent_tool_use_id": nil,
		"message": map[string]any{"id": id, "role": "assistant", "model": "m", "content": []any{map[string]any{"type": "text", "text": text}}}})
	msg, err := cc.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// What the SDK's reader pushes before the session has begun is mapped
// first, and what it pushes while the start maps those comes after them,
// in the order the CLI wrote them; nil ends the session's events.
func TestPushedMessagesKeepTheirOrder(t *testing.T) {
	const early = 500
	s := newCanonicalSession(nil, nil)
	for i := range early {
		s.pushed(assistantText(t, fmt.Sprintf("m%d", i), strconv.Itoa(i)))
	}
	var texts []string
	ended := make(chan bool, 1)
	go func() {
		end := false
		for e, err := range s.Events(context.Background()) {
			if err != nil {
				break
			}
			if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemMessage {
				texts = append(texts, e.Item.Text)
			}
			end = end || e.Kind == agent.KindSessionEnded
		}
		ended <- end
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for { // the reader pushes again as soon as the session has begun
			s.mu.Lock()
			begun := s.begun
			s.mu.Unlock()
			if begun {
				break
			}
			runtime.Gosched()
		}
		s.pushed(assistantText(t, "late", "late"))
		s.pushed(nil)
	}()
	s.beginPushed(stillLink{}, "m", "/w")
	wg.Wait()
	if !<-ended {
		t.Fatal("the session's events did not end at the output's end")
	}
	if len(texts) != early+1 || texts[early] != "late" {
		t.Fatalf("%d messages, the late one at %d", len(texts), slices.Index(texts, "late"))
	}
	for i := range early {
		if texts[i] != strconv.Itoa(i) {
			t.Fatalf("message %d is %q", i, texts[i])
		}
	}
}
