package sessions_test

import (
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
)

// Every payload the log holds is JSON a client's decoder reads: one that
// is not JSON, or nests deeper than agent.MaxRawDepth, is not logged (a
// native event that was nothing else says so as a protocol error), the
// others are, and every logged event reads back as checked.
func TestRawPayloadsAreCheckedOnce(t *testing.T) {
	deep := strings.Repeat("[", agent.MaxRawDepth+1) + strings.Repeat("]", agent.MaxRawDepth+1)
	fits := strings.Repeat("[", agent.MaxRawDepth) + strings.Repeat("]", agent.MaxRawDepth)
	m := runnertest.Manager(t, map[string]agent.Driver{
		"raw": newNativeWriter(4, false, `{"ok":1}`, `{"cut":`, deep, fits),
	}, eventlog.Options{})
	s, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "raw", WorkspaceID: "raw"})
	if err != nil {
		t.Fatal(err)
	}
	var seen []agent.Event
	events := follow(t, m, s.ID, 0)
	until(t, events, agent.KindSessionStarted, &seen)
	if err := m.Prompt(ctx(t), s.ID, agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	until(t, events, agent.KindTurnCompleted, &seen)
	check := func(what string, seen []agent.Event) {
		t.Helper()
		var natives []string
		protocolErrors := 0
		for _, e := range seen {
			if len(e.Raw) > 0 && !e.RawChecked {
				t.Errorf("%s: a %s event with an unchecked raw payload", what, e.Kind)
			}
			switch {
			case e.Kind == agent.KindNative && !strings.Contains(string(e.Raw), "mock"): // the mock's own
				natives = append(natives, string(e.Raw))
			case e.Kind == agent.KindError && e.Error.Code == agent.ErrorProtocol:
				protocolErrors++
			}
		}
		if len(natives) != 2 || natives[0] != `{"ok":1}` || natives[1] != fits || protocolErrors != 2 {
			t.Fatalf("%s: %d native events (%.20q…), %d protocol errors; want the two that fit and two errors", what, len(natives), natives, protocolErrors)
		}
	}
	check("live", seen)
	var logged []agent.Event
	for e, err := range m.Events(ctx(t), s.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		logged = append(logged, e)
		if e.Kind == agent.KindTurnCompleted {
			break
		}
	}
	check("from the log", logged)
}
