package sessions_test

import (
	"errors"
	"iter"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

// openMockCore is a core of the mock agent alone in dir.
func openMockCore(t *testing.T, dir string) *sessions.Manager {
	t.Helper()
	ws, err := workspace.New(filepath.Join(dir, "workspaces"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		t.Fatal(err)
	}
	log, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := approvals.Open(filepath.Join(dir, "approvals.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sessions.New(sessions.Config{Drivers: map[string]agent.Driver{"mock": mock.New(mock.Config{})},
		Workspaces: ws, Log: log, Approvals: store, IndexDir: filepath.Join(dir, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, m, log, store) })
	return m
}

// events is a slice as a history.
func history(events []agent.Event) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		for _, e := range events {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// A runner takes over a session another ran: the history keeps its seqs,
// a gap in it stays a gap, the agent resumes the conversation where it
// was, and the seq goes on after the history's last.
func TestAdoptContinuesTheSeq(t *testing.T) {
	first := openMockCore(t, t.TempDir())
	info, err := first.Create(ctx(t), sessions.CreateRequest{Agent: "mock", WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	events := follow(t, first, info.ID, 0)
	if err := first.Prompt(ctx(t), info.ID, agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	var seen []agent.Event
	until(t, events, agent.KindTurnCompleted, &seen)
	info, err = first.Get(info.ID)
	if err != nil {
		t.Fatal(err)
	}
	// As the stream may hold it: a crash of the first runner lost two seqs
	// before its last event.
	last := seen[len(seen)-1]
	last.Seq += 2
	past := append(seen[:len(seen)-1:len(seen)-1], last)

	second := openMockCore(t, t.TempDir())
	if _, err := second.Adopt(ctx(t), sessions.Adoption{Info: info}, history(nil)); !errors.Is(err, sessions.ErrNotAdoptable) {
		t.Fatalf("adopting with no history: %v", err)
	}
	got, err := second.Adopt(ctx(t), sessions.Adoption{Info: info, Options: mock.ResumeOptions(1)}, history(past))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != info.ID || got.LastSeq < uint64(last.Seq) {
		t.Fatalf("adopted %+v, want %s after seq %d", got, info.ID, last.Seq)
	}
	if _, err := second.Adopt(ctx(t), sessions.Adoption{Info: info}, history(past)); !errors.Is(err, sessions.ErrLive) {
		t.Fatalf("adopting a live session again: %v", err)
	}
	live := follow(t, second, info.ID, 0)
	if err := second.Prompt(ctx(t), info.ID, agent.Prompt{Text: "again"}); err != nil {
		t.Fatal(err)
	}
	var after []agent.Event
	until(t, live, agent.KindTurnCompleted, &after) // the history's turn
	until(t, live, agent.KindTurnCompleted, &after) // the resumed one's
	var seqs []int64
	for _, e := range after {
		seqs = append(seqs, e.Seq)
	}
	for i, e := range after {
		want := int64(i + 1)
		if i >= len(past)-1 {
			want = int64(i + 3) // past the gap
		}
		if e.Seq != want {
			t.Fatalf("seqs after the take-over: %v, want the history's then on after %d", seqs, last.Seq)
		}
	}
	resumed := after[len(past)]
	if resumed.Kind != agent.KindSessionStarted || resumed.Seq != last.Seq+1 {
		t.Fatalf("event after the history: %s at %d, want session.started at %d", resumed.Kind, resumed.Seq, last.Seq+1)
	}
	var reply strings.Builder
	for _, e := range after[len(past):] {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemMessage {
			reply.WriteString(e.Item.Text)
		}
	}
	if !strings.Contains(reply.String(), "turn 2") {
		t.Fatalf("the resumed conversation's reply %q, want its second turn", reply.String())
	}
}
