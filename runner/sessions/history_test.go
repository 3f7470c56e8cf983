package sessions_test

import (
	"context"
	"sync"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
)

// storeKeeper is the mock as an agent that keeps its conversations in a
// store of its own and leaves a session's history to the host
// (HostKeepsHistory): Messages reports what its store holds of the
// conversation the session resumed, as Claude Code's driver does.
type storeKeeper struct {
	agent.Driver
	mu    sync.Mutex
	store map[string][]agent.Item // by native id
}

func (d *storeKeeper) Start(ctx context.Context, req agent.StartRequest) (agent.Session, error) {
	s, err := d.Driver.Start(ctx, req)
	if err != nil || !req.HostKeepsHistory {
		return s, err
	}
	d.mu.Lock()
	past := d.store[req.Resume]
	d.mu.Unlock()
	return storedSession{s, past}, nil
}

type storedSession struct {
	agent.Session
	past []agent.Item
}

func (s storedSession) Messages(context.Context) ([]agent.Item, error) {
	return nil, &agent.HistoryElsewhereError{Past: s.past}
}

func prompts(items []agent.Item, text string) int {
	n := 0
	for _, it := range items {
		if it.Type == agent.ItemUserMessage && it.Text == text {
			n++
		}
	}
	return n
}

// A session that resumes a conversation lists its past once, then its
// own turns from the log; reopened after it ended (a restart), it lists
// them once still, though the agent's store now holds its turns too.
func TestMessagesListThePastOnce(t *testing.T) {
	d := &storeKeeper{Driver: mock.New(mock.Config{}), store: map[string][]agent.Item{}}
	m := runnertest.Manager(t, map[string]agent.Driver{"keeper": d}, eventlog.Options{})
	first, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "keeper", WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(ctx(t), first.ID); err != nil {
		t.Fatal(err)
	}
	first, _ = m.Get(first.ID)
	before := agent.Item{ID: "u0", Type: agent.ItemUserMessage, Status: agent.ItemDone, Text: "before the session"}
	d.store[first.NativeID] = []agent.Item{before}

	s, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "keeper", WorkspaceID: "w", Resume: first.NativeID})
	if err != nil {
		t.Fatal(err)
	}
	var seen []agent.Event
	events := follow(t, m, s.ID, 0)
	if err := m.Prompt(ctx(t), s.ID, agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	until(t, events, agent.KindTurnCompleted, &seen)
	items, err := m.Messages(ctx(t), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if prompts(items, "before the session") != 1 || prompts(items, "hello") != 1 || items[0].Text != "before the session" {
		t.Fatalf("messages of the resumed session: %+v", items)
	}
	// The agent's store now holds the session's turn too; the session ends
	// and is reopened, as a restart reopens it.
	d.store[first.NativeID] = items
	if err := m.Close(ctx(t), s.ID); err != nil {
		t.Fatal(err)
	}
	until(t, events, agent.KindSessionEnded, &seen)
	info, _ := m.Get(s.ID)
	if _, err := m.Reopen(ctx(t), s.ID, info.LastSeq, false); err != nil {
		t.Fatal(err)
	}
	items, err = m.Messages(ctx(t), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if prompts(items, "before the session") != 1 || prompts(items, "hello") != 1 {
		t.Fatalf("messages of the reopened session: %+v", items)
	}
}
