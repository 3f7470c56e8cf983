package sessions_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the mock claude CLI.
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockclaude.Main())
	}
	goleak.VerifyTestMain(m)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newManager is a sessions core on temp directories whose one agent kind,
// "claude", is the mock CLI in the demo scenario (a streamed reply and a
// Write that asks for approval).
func newManager(t *testing.T, c *clock, timeout time.Duration) *sessions.Manager {
	t.Helper()
	dir := t.TempDir()
	ws, err := workspace.New(filepath.Join(dir, "workspaces"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		t.Fatal(err)
	}
	log, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := approvals.Open(filepath.Join(dir, "approvals.db"), c.now)
	if err != nil {
		t.Fatal(err)
	}
	claudeDriver := &claudecli.Canonical{Now: c.now, Base: claude.Options{CLIPath: os.Args[0], ReplaceEnv: true,
		Env: map[string]string{mockclaude.EnvMain: "1", mockclaude.EnvScenario: "demo", "PATH": os.Getenv("PATH")}}}
	m, err := sessions.New(sessions.Config{Drivers: map[string]agent.Driver{"claude": claudeDriver},
		Unavailable: map[string]string{"opencode": "opencode not found on PATH"}, Workspaces: ws, Log: log, Approvals: store, ApprovalTimeout: timeout, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		_ = log.Close()
		_ = store.Close()
	})
	return m
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// follow reads a session's events live into a channel.
func follow(t *testing.T, m *sessions.Manager, id string, after uint64) <-chan agent.Event {
	ch := make(chan agent.Event, 256)
	c, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for e, err := range m.Events(c, id, after) {
			if err != nil {
				return
			}
			select {
			case ch <- e:
			case <-c.Done(): // a test that stopped reading
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ch
}

func until(t *testing.T, ch <-chan agent.Event, k agent.Kind, seen *[]agent.Event) agent.Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("events ended before %s", k)
			}
			*seen = append(*seen, e)
			if e.Kind == k {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s", k)
		}
	}
}

// A session's events are logged with seqs from 1, its approval is listed
// across sessions and answered once through the core, and a reader that
// comes back later gets exactly the events after its seq.
func TestSessionLifecycle(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	m := newManager(t, c, 0)
	if _, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "codex", WorkspaceID: "w1"}); !errors.Is(err, sessions.ErrUnknownAgent) {
		t.Fatalf("unknown agent: %v", err)
	}
	// A kind the runner knows but cannot offer says why.
	_, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "opencode", WorkspaceID: "w1"})
	if !errors.Is(err, sessions.ErrUnknownAgent) || !strings.Contains(err.Error(), "opencode not found on PATH") {
		t.Fatalf("unavailable agent: %v", err)
	}
	info, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "claude", WorkspaceID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "claude", WorkspaceID: "w1"}); err == nil {
		t.Fatal("a second session took a busy workspace")
	}
	live := follow(t, m, info.ID, 0)
	if err := m.Prompt(ctx(t), info.ID, agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	var seen []agent.Event
	asked := until(t, live, agent.KindApprovalRequested, &seen)
	pending, err := m.Approvals()
	if err != nil || len(pending) != 1 || pending[0].Approval.SessionID != info.ID || pending[0].Approval.ID != asked.Approval.ID {
		t.Fatalf("pending %+v %v", pending, err)
	}
	if got, _ := m.Get(info.ID); got.State != sessions.StateRunning {
		t.Fatalf("state %s during a turn", got.State)
	}
	if _, err := m.Resolve(ctx(t), info.ID, agent.Resolution{ApprovalID: asked.Approval.ID, Decision: agent.Allow, Scope: agent.ScopeAlways}); !errors.Is(err, agent.ErrUnsupported) {
		t.Fatalf("a scope the agent lacks: %v", err)
	}
	won, err := m.Resolve(ctx(t), info.ID, agent.Resolution{ApprovalID: asked.Approval.ID, Decision: agent.Allow, By: "laptop"})
	if err != nil || won.By != "laptop" {
		t.Fatalf("resolve: %+v %v", won, err)
	}
	var already *agent.AlreadyResolvedError
	if _, err := m.Resolve(ctx(t), info.ID, agent.Resolution{ApprovalID: asked.Approval.ID, Decision: agent.Deny, By: "phone"}); !errors.As(err, &already) || already.First.By != "laptop" {
		t.Fatalf("second resolve: %v", err)
	}
	until(t, live, agent.KindTurnCompleted, &seen)
	if got, _ := m.Get(info.ID); got.State != sessions.StateIdle || got.LastSeq != uint64(seen[len(seen)-1].Seq) {
		t.Fatalf("after the turn: %+v, last event %d", got, seen[len(seen)-1].Seq)
	}
	for i, e := range seen {
		if e.Seq != int64(i+1) || e.SessionID != info.ID {
			t.Fatalf("event %d: seq %d session %s", i, e.Seq, e.SessionID)
		}
		if err := e.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	// A reader coming back after seq 3 gets the rest, once each.
	var again []agent.Event
	later := follow(t, m, info.ID, 3)
	for range len(seen) - 3 {
		again = append(again, <-later)
	}
	if again[0].Seq != 4 || again[len(again)-1].Seq != seen[len(seen)-1].Seq || again[0].Kind != seen[3].Kind {
		t.Fatalf("resumed read from %d to %d", again[0].Seq, again[len(again)-1].Seq)
	}
	if err := m.Close(ctx(t), info.ID); err != nil {
		t.Fatal(err)
	}
	end := until(t, live, agent.KindSessionEnded, &seen)
	if got, _ := m.Get(info.ID); got.State != sessions.StateEnded || end.Session.Reason != "closed" {
		t.Fatalf("after close: %+v %+v", got, end.Session)
	}
	if _, ok := <-live; ok {
		t.Fatal("events went on after session.ended")
	}
	// The workspace is free again.
	next, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "claude", WorkspaceID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Close(ctx(t), next.ID)
}

// An approval nobody answers expires with its default (deny): the agent
// is told, the tool does not run, the turn ends.
func TestApprovalExpires(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	m := newManager(t, c, time.Minute)
	info, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "claude", WorkspaceID: "w2"})
	if err != nil {
		t.Fatal(err)
	}
	live := follow(t, m, info.ID, 0)
	if err := m.Prompt(ctx(t), info.ID, agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	var seen []agent.Event
	asked := until(t, live, agent.KindApprovalRequested, &seen)
	if !asked.Approval.Expires.Equal(asked.Approval.Created.Add(time.Minute)) || asked.Approval.Default != agent.Deny {
		t.Fatalf("approval %+v", asked.Approval)
	}
	if got, _ := m.Expire(ctx(t)); len(got) != 0 {
		t.Fatalf("expired early: %+v", got)
	}
	c.add(time.Minute)
	got, err := m.Expire(ctx(t))
	if err != nil || len(got) != 1 || got[0].Resolution.Cause != agent.CauseExpired {
		t.Fatalf("expired %+v %v", got, err)
	}
	resolved := until(t, live, agent.KindApprovalResolved, &seen)
	if resolved.Resolution.Decision != agent.Deny || resolved.Resolution.Cause != agent.CauseExpired {
		t.Fatalf("resolved %+v", resolved.Resolution)
	}
	until(t, live, agent.KindTurnCompleted, &seen)
	declined := 0
	for _, e := range seen {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemFileChange {
			if e.Item.Status != agent.ItemDeclined {
				t.Fatalf("the expired approval's file change ran: %+v", e.Item)
			}
			declined++
		}
	}
	if declined != 1 {
		t.Fatalf("%d declined file changes", declined)
	}
}

// Approvals a previous run left pending are settled when the core starts
// again: denied, with the reason, never waiting forever.
func TestRestartSettlesOrphanedApprovals(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	path := filepath.Join(dir, "approvals.db")
	store, err := approvals.Open(path, c.now)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Add(agent.Approval{ID: "a1", SessionID: "ses_old", Kind: agent.ApprovalTool, Title: "Bash: ls"}); err != nil {
		t.Fatal(err)
	}
	ws, _ := workspace.New(filepath.Join(dir, "workspaces"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	log, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	defer store.Close()
	if _, err := sessions.New(sessions.Config{Drivers: map[string]agent.Driver{"claude": &claudecli.Canonical{}},
		Workspaces: ws, Log: log, Approvals: store}); err != nil {
		t.Fatal(err)
	}
	rec, err := store.Get("ses_old", "a1")
	if err != nil || rec.Pending() || rec.Resolution.Decision != agent.Deny || rec.Resolution.Reason != "the runner restarted" {
		t.Fatalf("orphan after restart: %+v %v", rec, err)
	}
}

// The runner-wide feed carries every session's events once, in the order
// they were logged, and resumes from a position.
func TestFeed(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	m := newManager(t, c, 0)
	var ids []string
	for _, w := range []string{"w1", "w2"} {
		info, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "claude", WorkspaceID: w})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	for _, id := range ids {
		if err := m.Close(ctx(t), id); err != nil {
			t.Fatal(err)
		}
	}
	feedCtx, stop := context.WithCancel(ctx(t))
	defer stop()
	var all []sessions.FeedEvent
	next := map[string]int64{}
	for fe, err := range m.Feed(feedCtx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, fe)
		if fe.Pos != uint64(len(all)) || fe.Event.Seq != next[fe.Event.SessionID]+1 {
			t.Fatalf("feed event %d: pos %d, %s seq %d", len(all), fe.Pos, fe.Event.SessionID, fe.Event.Seq)
		}
		next[fe.Event.SessionID] = fe.Event.Seq
		if ended := fe.Event.Kind == agent.KindSessionEnded; ended && len(next) == 2 && allEnded(all) {
			break
		}
	}
	for _, id := range ids {
		if info, _ := m.Get(id); next[id] != int64(info.LastSeq) {
			t.Fatalf("the feed has %d events of %s, the session %d", next[id], id, info.LastSeq)
		}
	}
	for fe, err := range m.Feed(feedCtx, 2) {
		if err != nil || fe.Pos != 3 || fe.Event.Kind != all[2].Event.Kind {
			t.Fatalf("resumed feed: %+v %v", fe, err)
		}
		break
	}
}

func allEnded(feed []sessions.FeedEvent) bool {
	n := 0
	for _, fe := range feed {
		if fe.Event.Kind == agent.KindSessionEnded {
			n++
		}
	}
	return n == 2
}

// A runner killed while a session waits for an approval: when it starts
// again, it lists the session, ends it in its log — the approval denied
// with the reason, the turn failed, session.ended — so a client following
// it sees it end, and it does so once however often it restarts. The
// crash is a copy of the runner's files taken while the session waited.
func TestRestartEndsTheSessionsItLeftRunning(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	live, crashed := t.TempDir(), t.TempDir()
	m1, log1, store1 := openCore(t, live, c)
	info, err := m1.Create(ctx(t), sessions.CreateRequest{Agent: "claude", WorkspaceID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m1.Prompt(ctx(t), info.ID, agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	// Up to the approval and its tool's item, in whichever order they
	// come (the CLI's question and its message race in the SDK).
	var before []agent.Event
	var asked *agent.Approval
	started := map[string]bool{}
	for e, err := range m1.Events(ctx(t), info.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, e)
		switch e.Kind {
		case agent.KindApprovalRequested:
			asked = e.Approval
		case agent.KindItemStarted:
			started[e.Item.ID] = true
		}
		if asked != nil && started[asked.ItemID] {
			break
		}
	}
	if err := log1.Sync(ctx(t)); err != nil {
		t.Fatal(err)
	}
	copyTree(t, live, crashed) // the runner dies here
	shutdown(t, m1, log1, store1)

	for restart := range 2 {
		observed := &eventsObserved{}
		m2, log2, store2 := openCore(t, crashed, c, observed)
		got, err := m2.Get(info.ID)
		if err != nil || got.State != sessions.StateEnded || got.TurnID != "" || len(m2.List()) != 1 {
			t.Fatalf("restart %d: %+v %v", restart, got, err)
		}
		var all []agent.Event
		for e, err := range m2.Events(ctx(t), info.ID, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Validate(); err != nil {
				t.Fatal(err)
			}
			all = append(all, e)
		}
		// What the restart added: from its denial of the approval on (the
		// agent may have logged more after the approval before the crash).
		first := slices.IndexFunc(all, func(e agent.Event) bool {
			return e.Kind == agent.KindApprovalResolved && e.Resolution.Reason == "the runner restarted"
		})
		if first < len(before)-1 {
			t.Fatalf("restart %d: no denial after the %d events seen before the crash: %+v", restart, len(before), all)
		}
		after := all[first:]
		kinds := []agent.Kind{}
		for _, e := range after {
			kinds = append(kinds, e.Kind)
		}
		// The Write waiting for the approval is the one open item: it did
		// not run.
		want := []agent.Kind{agent.KindApprovalResolved, agent.KindItemCompleted, agent.KindTurnCompleted, agent.KindSessionEnded}
		approved := asked
		if !slices.Equal(kinds, want) || after[0].Resolution.Decision != agent.Deny ||
			after[0].Resolution.ApprovalID != approved.ID ||
			after[1].Item.ID != approved.ItemID || after[1].Item.Status != agent.ItemDeclined || after[1].TurnID != approved.TurnID ||
			after[2].Turn.Status != agent.TurnFailed ||
			after[3].Error == nil || !strings.Contains(after[3].Error.Message, "the runner restarted") {
			t.Fatalf("restart %d: events after the crash %v: %+v", restart, kinds, after)
		}
		if open := openItems(all); len(open) != 0 {
			t.Fatalf("restart %d: items never completed: %v", restart, open)
		}
		end := after[len(after)-1]
		if got.LastSeq != uint64(end.Seq) {
			t.Fatalf("last seq %d, events end at %d", got.LastSeq, end.Seq)
		}
		// The events a restart writes are observed like any other (the
		// metrics count the session's end); the second restart writes none.
		observed.mu.Lock()
		seen := observed.events
		observed.mu.Unlock()
		if restart == 0 && (len(seen) != len(after) || seen[len(seen)-1].Kind != agent.KindSessionEnded || seen[len(seen)-1].Seq != end.Seq) ||
			restart == 1 && len(seen) != 0 {
			t.Fatalf("restart %d: observed %+v", restart, seen)
		}
		if pending, _ := m2.Approvals(); len(pending) != 0 {
			t.Fatalf("still pending: %+v", pending)
		}
		if err := m2.Prompt(ctx(t), info.ID, agent.Prompt{Text: "again"}); !errors.Is(err, agent.ErrSessionEnded) {
			t.Fatalf("prompt to an ended session: %v", err)
		}
		if _, err := m2.Diff(ctx(t), info.ID); err != nil {
			t.Fatalf("diff of an ended session: %v", err)
		}
		shutdown(t, m2, log2, store2)
	}
}

// openItems are the ids of the items events start and never complete.
func openItems(events []agent.Event) []string {
	var open []string
	for _, e := range events {
		switch e.Kind {
		case agent.KindItemStarted:
			if !slices.Contains(open, e.Item.ID) {
				open = append(open, e.Item.ID)
			}
		case agent.KindItemCompleted:
			open = slices.DeleteFunc(open, func(id string) bool { return id == e.Item.ID })
		}
	}
	return open
}

// openCore opens a sessions core on dir's files, with an index.
func openCore(t *testing.T, dir string, c *clock, observer ...sessions.Observer) (*sessions.Manager, *eventlog.Bolt, *approvals.Store) {
	t.Helper()
	ws, err := workspace.New(filepath.Join(dir, "workspaces"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		t.Fatal(err)
	}
	log, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := approvals.Open(filepath.Join(dir, "approvals.db"), c.now)
	if err != nil {
		t.Fatal(err)
	}
	claudeDriver := &claudecli.Canonical{Now: c.now, Base: claude.Options{CLIPath: os.Args[0], ReplaceEnv: true,
		Env: map[string]string{mockclaude.EnvMain: "1", mockclaude.EnvScenario: "demo", "PATH": os.Getenv("PATH")}}}
	cfg := sessions.Config{Drivers: map[string]agent.Driver{"claude": claudeDriver},
		Workspaces: ws, Log: log, Approvals: store, Now: c.now, IndexDir: filepath.Join(dir, "sessions")}
	if len(observer) > 0 {
		cfg.Observer = observer[0]
	}
	m, err := sessions.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, log, store
}

// eventsObserved records the events an Observer is told of.
type eventsObserved struct {
	mu     sync.Mutex
	events []agent.Event
}

func (o *eventsObserved) AgentStarted(string, error) {}
func (o *eventsObserved) EventLogged(_ string, e *agent.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, *e)
}

func shutdown(t *testing.T, m *sessions.Manager, log *eventlog.Bolt, store *approvals.Store) {
	t.Helper()
	if err := m.Shutdown(ctx(t)); err != nil {
		t.Error(err)
	}
	_ = log.Close()
	_ = store.Close()
}

// copyTree copies dir's regular files (not the workspaces' git data).
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
