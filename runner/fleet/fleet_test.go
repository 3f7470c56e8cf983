package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/internal/testing/natstest"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openLone joins a one-node fleet whose node runs in the test's process.
func openLone(t *testing.T, name string) *Fleet {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	body := fmt.Sprintf("server_name: %s\nlisten: 127.0.0.1:-1\nauthorization { user: u, password: p }\njetstream { store_dir: %q }\n",
		name, filepath.Join(dir, "js"))
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(context.Background(), Config{Name: name, NodeConfig: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func openLog(t testing.TB) *eventlog.Bolt {
	t.Helper()
	l, err := eventlog.Open(filepath.Join(t.TempDir(), "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// publishing runs f's publisher until the test ends.
func publishing(t testing.TB, f *Fleet) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.pub.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func appendEvents(t *testing.T, l *Log, session string, kinds ...agent.Kind) {
	t.Helper()
	var payloads [][]byte
	for _, k := range kinds {
		e := agent.Event{Kind: k, SessionID: session, Time: time.Now().UTC()}
		switch k {
		case agent.KindSessionStarted, agent.KindSessionEnded:
			e.Session = &agent.SessionInfo{Agent: "mock"}
		case agent.KindTurnStarted:
			e.TurnID, e.Turn = "t", &agent.TurnInfo{}
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, b)
	}
	if _, _, err := l.AppendAt(context.Background(), session, payloads); err != nil {
		t.Fatal(err)
	}
}

func syncStream(t *testing.T, f *Fleet) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.pub.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// readAll reads session from the stream until its session.ended.
func readAll(t *testing.T, f *Fleet, session string, after uint64) []agent.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []agent.Event
	for e, err := range f.streamEvents(ctx, session, after) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if ctx.Err() != nil {
		t.Fatalf("reading %s: no session.ended within the time: %d events", session, len(out))
	}
	return out
}

func seqs(events []agent.Event) []int64 {
	var out []int64
	for _, e := range events {
		out = append(out, e.Seq)
	}
	return out
}

// The publisher copies what the local log holds into the stream, each
// event once and in seq order; a reader from any seq gets the rest once.
func TestPublisherCopiesTheLogOnce(t *testing.T) {
	f := openLone(t, "a")
	l := f.Log(openLog(t))
	publishing(t, f)
	appendEvents(t, l, "s1", agent.KindSessionStarted, agent.KindTurnStarted)
	appendEvents(t, l, "s2", agent.KindSessionStarted)
	appendEvents(t, l, "s1", agent.KindTurnCompleted, agent.KindSessionEnded)
	appendEvents(t, l, "s2", agent.KindSessionEnded)
	syncStream(t, f)
	if got := seqs(readAll(t, f, "s1", 0)); fmt.Sprint(got) != "[1 2 3 4]" {
		t.Fatalf("s1 from the stream: %v", got)
	}
	if got := seqs(readAll(t, f, "s1", 2)); fmt.Sprint(got) != "[3 4]" {
		t.Fatalf("s1 after 2: %v", got)
	}
	if got := readAll(t, f, "s1", 4); len(got) != 0 {
		t.Fatalf("s1 after its end: %v", seqs(got))
	}
	if got := seqs(readAll(t, f, "s2", 0)); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("s2 from the stream: %v", got)
	}
	if got := storedSeqs(t, f, "s1"); fmt.Sprint(got) != "[1 2 3 4]" {
		t.Fatalf("the stream holds s1's %v", got)
	}
	if got := storedSeqs(t, f, "s2"); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("the stream holds s2's %v", got)
	}
}

// storedSeqs is the seq of every event the stream holds of session, in
// the stream's order, duplicates and all.
func storedSeqs(t *testing.T, f *Fleet, session string) []uint64 {
	t.Helper()
	var out []uint64
	for pos := uint64(0); ; {
		m, err := f.nextStored(context.Background(), eventSubject(session), pos)
		if errors.Is(err, errNoMessage) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		events, err := splitBatch(m.header, m.data)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			out = append(out, e.seq)
		}
		pos = m.pos
	}
}

// A runner that starts again (a publisher that knows nothing) publishes
// only what the stream lacks: nothing twice.
func TestRestartedPublisherSendsNothingTwice(t *testing.T) {
	f := openLone(t, "a")
	local := openLog(t)
	l := f.Log(local)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.pub.run(ctx) }()
	appendEvents(t, l, "s", agent.KindSessionStarted, agent.KindTurnStarted)
	syncStream(t, f)
	cancel()
	<-done

	l = f.Log(local) // a new publisher over the same log
	publishing(t, f)
	f.pub.mark("s", 0)
	appendEvents(t, l, "s", agent.KindTurnCompleted, agent.KindSessionEnded)
	syncStream(t, f)
	if got := seqs(readAll(t, f, "s", 0)); fmt.Sprint(got) != "[1 2 3 4]" {
		t.Fatalf("after a restart: %v", got)
	}
	if got := storedSeqs(t, f, "s"); fmt.Sprint(got) != "[1 2 3 4]" {
		t.Fatalf("the stream holds %v", got)
	}
}

// When another runner has written a session's next event (the fleet
// ended it for a runner it took for lost), the runner stops publishing
// that session: nothing it logs after interleaves.
func TestPublisherIsFencedByAnotherWriter(t *testing.T) {
	f := openLone(t, "a")
	l := f.Log(openLog(t))
	publishing(t, f)
	appendEvents(t, l, "s", agent.KindSessionStarted)
	syncStream(t, f)

	other := &Core{f: &Fleet{cfg: Config{Name: "b"}, js: f.js, events: f.events}}
	ended := agent.Event{Kind: agent.KindSessionEnded, SessionID: "s", Time: time.Now().UTC(),
		Session: &agent.SessionInfo{Agent: "mock", Reason: agent.ReasonRunnerLost}}
	last, pos, _, err := f.lastEvent(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.publishAfter(context.Background(), "s", last, pos, []agent.Event{ended}); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, l, "s", agent.KindTurnStarted)
	syncStream(t, f)
	events := readAll(t, f, "s", 0)
	if len(events) != 2 || events[1].Session.Reason != agent.ReasonRunnerLost {
		t.Fatalf("the stream after the fence: %v", events)
	}
	f.pub.mu.Lock()
	fenced := f.pub.state["s"].fenced
	f.pub.mu.Unlock()
	if !fenced {
		t.Fatal("the publisher did not stop publishing a session another runner writes")
	}
}

// A runner that took a session over, and restarted before it published
// anything of it, finds the stream ending with the lost runner's events:
// its log holds them too (the take-over copied them), so it writes on
// rather than taking itself for fenced out.
func TestTakeOverPublishesAfterARestart(t *testing.T) {
	f := openLone(t, "a")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lost := &Core{f: &Fleet{cfg: Config{Name: "b"}, js: f.js, events: f.events}}
	now := time.Now().UTC()
	history := []agent.Event{
		{Kind: agent.KindSessionStarted, SessionID: "s", Time: now, Session: &agent.SessionInfo{Agent: "mock"}},
		{Kind: agent.KindSessionEnded, SessionID: "s", Time: now.Add(time.Millisecond),
			Session: &agent.SessionInfo{Agent: "mock", Reason: agent.ReasonRunnerLost}},
	}
	if err := lost.publishAfter(ctx, "s", 0, 0, history); err != nil {
		t.Fatal(err)
	}
	// What the take-over copied into this runner's log, then an event of
	// its own, logged by the runner started again: a publisher that
	// knows nothing of the take-over.
	l := f.Log(openLog(t))
	var copied [][]byte
	for _, e := range history {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		copied = append(copied, b)
	}
	if _, _, err := l.AppendAt(ctx, "s", copied); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, l, "s", agent.KindTurnStarted)
	publishing(t, f)
	syncStream(t, f)
	if got := storedSeqs(t, f, "s"); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("the stream holds %v, want [1 2 3]", got)
	}
}

// A reader puts right events a retried publish left out of order, and
// drops a duplicate, as long as each seq comes once in the end.
func TestReaderReordersAndDropsDuplicates(t *testing.T) {
	f := openLone(t, "a")
	put := func(seq uint64, k agent.Kind) {
		e := agent.Event{Kind: k, SessionID: "s", Time: time.Now().UTC(), Session: &agent.SessionInfo{Agent: "mock"}}
		b, _ := json.Marshal(e)
		m := &nats.Msg{Subject: eventSubject("s"), Data: b, Header: nats.Header{}}
		m.Header.Set(seqHeader, strconv.FormatUint(seq, 10))
		if _, err := f.js.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	put(1, agent.KindSessionStarted)
	put(3, agent.KindItemStarted)
	put(2, agent.KindTurnStarted)
	put(3, agent.KindItemStarted)
	put(4, agent.KindSessionEnded)
	if got := seqs(readAll(t, f, "s", 0)); fmt.Sprint(got) != "[1 2 3 4]" {
		t.Fatalf("read %v", got)
	}
}

// A live reader gets what is published after it began.
func TestReaderFollowsLive(t *testing.T) {
	f := openLone(t, "a")
	l := f.Log(openLog(t))
	publishing(t, f)
	appendEvents(t, l, "s", agent.KindSessionStarted)
	syncStream(t, f)
	got := make(chan []agent.Event, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var out []agent.Event
		for e, err := range f.streamEvents(ctx, "s", 0) {
			if err != nil {
				break
			}
			out = append(out, e)
		}
		got <- out
	}()
	time.Sleep(50 * time.Millisecond)
	appendEvents(t, l, "s", agent.KindTurnStarted)
	time.Sleep(20 * time.Millisecond)
	appendEvents(t, l, "s", agent.KindTurnCompleted, agent.KindSessionEnded)
	if events := <-got; fmt.Sprint(seqs(events)) != "[1 2 3 4]" {
		t.Fatalf("live: %v", seqs(events))
	}
}

// Every error a caller matches survives the trip between runners.
func TestWireErrorsMatch(t *testing.T) {
	for _, s := range sentinels {
		err := toWire(fmt.Errorf("owner says: %w", s.err)).err()
		if !errors.Is(err, s.err) {
			t.Errorf("%s: %v does not match after the wire", s.code, err)
		}
	}
	first := agent.Resolution{ApprovalID: "a1", Decision: agent.Allow, Cause: agent.CauseClient, By: "ops"}
	var already *agent.AlreadyResolvedError
	if err := toWire(&agent.AlreadyResolvedError{First: first}).err(); !errors.As(err, &already) || already.First.By != "ops" {
		t.Fatalf("already resolved after the wire: %v", err)
	}
	if err := toWire(errors.New("something else")).err(); err == nil || err.Error() != "something else" {
		t.Fatalf("a plain error after the wire: %v", err)
	}
	var busy = &workspace.BusyError{}
	if !errors.Is(toWire(busy).err(), workspace.ErrBusy) {
		t.Fatal("a busy workspace after the wire")
	}
}

// However often a command is asked, it runs once, and every asker gets
// its answer.
func TestAnswersRunACommandOnce(t *testing.T) {
	var a answers
	runs := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ans, first := a.get("id", time.Now())
			if first {
				mu.Lock()
				runs++
				mu.Unlock()
				a.finish(ans, []byte("done"), time.Now())
			}
			<-ans.done
			if string(ans.reply) != "done" {
				t.Error("an asker got no answer")
			}
		}()
	}
	wg.Wait()
	if runs != 1 {
		t.Fatalf("the command ran %d times", runs)
	}
	if _, first := a.get("id", time.Now().Add(repliesKept+time.Second)); !first {
		t.Fatal("an answer was kept past repliesKept")
	}
}

// Session ids and runner names become one subject token and a valid key.
func TestTokens(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{"ses_0123abcd", "2c4f0e55-8a1e-4b4c-9d55-0f1e2d3c4b5a", "a.b", "a b", "*", ">", "=x", "é"} {
		tok := token(id)
		for _, c := range tok {
			if c == '.' || c == ' ' || c == '*' || c == '>' {
				t.Errorf("%q: token %q holds %q", id, tok, c)
			}
		}
		if prev, ok := seen[tok]; ok {
			t.Errorf("%q and %q share token %q", id, prev, tok)
		}
		seen[tok] = id
	}
}

// A node configuration that lets anyone in, or has no JetStream, is
// refused with a sentence that says what is missing.
func TestNodeConfigRefused(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"without authentication":    "listen: 127.0.0.1:-1\njetstream { store_dir: %q }\n",
		"does not enable JetStream": "listen: 127.0.0.1:-1\nauthorization { user: u, password: p }\n#%q\n",
	} {
		conf := filepath.Join(dir, "n.conf")
		if err := os.WriteFile(conf, []byte(fmt.Sprintf(body, filepath.Join(dir, "js"))), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(context.Background(), Config{Name: "a", NodeConfig: conf})
		if !errors.Is(err, ErrNodeConfig) || !containsText(err, name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func containsText(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// openCluster joins n runners to one fleet whose n nodes run in the
// test's process, its stream and buckets replicated on all of them.
func openCluster(t testing.TB, n int) []*Fleet {
	t.Helper()
	confs, _, err := natstest.Cluster(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	fleets, errs := make([]*Fleet, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fleets[i], errs[i] = Open(context.Background(), Config{Name: fmt.Sprintf("r%d", i), NodeConfig: confs[i]})
		}()
	}
	wg.Wait()
	for i := range n {
		if fleets[i] != nil {
			t.Cleanup(fleets[i].Close)
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return fleets
}

// Of two runners that write a session's registry entry over the same
// revision at once, at most one wins and the other meets a conflict,
// whether the bucket is a lone server's or replicated: a replicated bucket
// reports writes in flight together with another code than one behind
// the other (and may refuse both), and a take-over that meets the lost
// runner's end being marked must see a conflict in either, not fail.
func TestRegistryConflictOnEveryBucket(t *testing.T) {
	lone := openLone(t, "lone")
	cluster := openCluster(t, 3)
	for name, f := range map[string]*Fleet{"lone": lone, "replicated": cluster[1]} {
		codes := map[jetstream.ErrorCode]int{}
		for round := range 50 {
			key := fmt.Sprintf("ses_%d", round)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			rev, err := f.sessions.Create(ctx, key, []byte(`{}`))
			if err != nil {
				cancel()
				t.Fatalf("%s: %v", name, err)
			}
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = f.sessions.Update(ctx, key, []byte(fmt.Sprintf(`{"runner":"r%d"}`, i)), rev)
				}()
			}
			wg.Wait()
			cancel()
			if errs[0] == nil && errs[1] == nil {
				t.Fatalf("%s: two writes over revision %d both won", name, rev)
			}
			for _, err := range errs {
				if err == nil {
					continue
				}
				if !revisionConflict(err) {
					t.Fatalf("%s: a write that lost: %v, want a conflict", name, err)
				}
				var apiErr *jetstream.APIError
				if errors.As(err, &apiErr) {
					codes[apiErr.ErrorCode]++
				}
			}
		}
		t.Logf("%s: conflicts by code: %v", name, codes)
	}
}

// serveLone is a lone fleet's runner with its session core, on the mock.
func serveLone(t *testing.T, name string) (*Fleet, *Core) {
	t.Helper()
	f := openLone(t, name)
	return f, serve(t, f)
}

// serve opens a session core on the mock for f's runner, until the test
// ends.
func serve(t *testing.T, f *Fleet) *Core {
	t.Helper()
	m := runnertest.ManagerWith(t, map[string]agent.Driver{"mock": mock.New(mock.Config{})}, eventlog.Options{},
		func(cfg *sessions.Config) { cfg.Log, cfg.Observer = f.Log(cfg.Log), f.Observer(nil) })
	c, err := f.Serve(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Shutdown(ctx)
		_ = c.Leave(ctx)
	})
	return c
}

// Of two runners that claim a lost runner's session at once, on a
// replicated registry, exactly one gets it and the other is told another
// runner is taking it over; neither fails for the write in flight beside
// its own.
func TestOneClaimWins(t *testing.T) {
	fleets := openCluster(t, 3)
	cores := []*Core{serve(t, fleets[1]), serve(t, fleets[2])}
	for round := range 30 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lost := sessionEntry{Info: sessions.Info{ID: fmt.Sprintf("ses_lost%d", round), Agent: "mock", Runner: "r9",
			State: sessions.StateEnded}, Cause: agent.ReasonRunnerLost}
		data, err := json.Marshal(lost)
		if err != nil {
			t.Fatal(err)
		}
		rev, err := fleets[0].sessions.Create(ctx, token(lost.ID), data)
		if err != nil {
			t.Fatal(err)
		}
		errs := make([]error, len(cores))
		var wg sync.WaitGroup
		for i, c := range cores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = c.claim(ctx, sessionRev{sessionEntry: lost, rev: rev})
			}()
		}
		wg.Wait()
		cancel()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, sessions.ErrLive):
				t.Fatalf("round %d: a claim failed: %v", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d claims won (%v)", round, won, errs)
		}
	}
}

// A runner that took a session over may hear of its own claim after the
// lost runner's entry: it must not take the session it now runs for one
// of the lost runner's and end it.
func TestOwnTakeOverIsNoOrphan(t *testing.T) {
	f, c := serveLone(t, "r2")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := c.Create(ctx, sessions.CreateRequest{Agent: "mock", WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// The view as it was before the take-over: the session live on r1,
	// a runner that stopped heartbeating long ago. The watch may put the
	// entry back meanwhile, and until the runner hears its own heartbeat
	// it judges nobody: try until it takes the entry for an orphan.
	var orphans []sessionRev
	for len(orphans) != 1 {
		c.reg.mu.Lock()
		lagging := c.reg.sessions[info.ID]
		lagging.Runner, lagging.State, lagging.at = "r1", sessions.StateRunning, time.Now().Add(-time.Hour)
		c.reg.sessions[info.ID] = lagging
		c.reg.mu.Unlock()
		if orphans = c.orphans(); len(orphans) == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the lagging entry never counted as a lost runner's")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if failing := c.endOrphans(ctx, orphans, nil); len(failing) != 0 {
		t.Fatalf("ending orphans failed: %v", failing)
	}
	seq, _, writer, err := f.lastEvent(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if f.endedBy(ctx, info.ID, seq) {
		t.Fatalf("the session this runner runs was ended as a lost runner's (its last event by %s)", writer)
	}
	if got, err := c.local.Get(info.ID); err != nil || got.State == sessions.StateEnded {
		t.Fatalf("the session here: %+v, %v", got, err)
	}
}

// The heartbeat tells the runner's live sessions, and what it costs each
// beat does not grow with them: it runs every second on every runner,
// idle or not.
func TestHeartbeatCostsTheSameWithManySessions(t *testing.T) {
	_, c := serveLone(t, "r0")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	made := 0
	create := func(n int) (ids []string) {
		for range n {
			made++
			info, err := c.Create(ctx, sessions.CreateRequest{Agent: "mock", WorkspaceID: fmt.Sprintf("w%d", made)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, info.ID)
		}
		return ids
	}
	ids := create(1)
	if got := c.self().Sessions; got != 1 {
		t.Fatalf("the heartbeat tells %d sessions, want 1", got)
	}
	few := bytesPerCall(func() { _ = c.self() })
	ids = append(ids, create(99)...)
	if got := c.self().Sessions; got != 100 {
		t.Fatalf("the heartbeat tells %d sessions, want 100", got)
	}
	many := bytesPerCall(func() { _ = c.self() })
	if many > few+512 {
		t.Fatalf("a heartbeat allocates %d bytes with 100 sessions, %d with 1", many, few)
	}
	t.Logf("a heartbeat allocates %d bytes with 1 session, %d with 100", few, many)
	if err := c.Close(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	for c.self().Sessions != 99 {
		select {
		case <-ctx.Done():
			t.Fatalf("the heartbeat tells %d sessions after one ended, want 99", c.self().Sessions)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// bytesPerCall is what f allocates per call, the least of a few rounds:
// the fleet's own goroutines allocate meanwhile.
func bytesPerCall(f func()) uint64 {
	const calls = 20
	least := uint64(math.MaxUint64)
	var before, after runtime.MemStats
	for range 5 {
		runtime.ReadMemStats(&before)
		for range calls {
			f()
		}
		runtime.ReadMemStats(&after)
		least = min(least, (after.TotalAlloc-before.TotalAlloc)/calls)
	}
	return least
}

// serveOneSession is a lone fleet's runner with one mock session.
func serveOneSession(t *testing.T) (*Core, sessions.Info) {
	t.Helper()
	_, c := serveLone(t, "r0")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := c.Create(ctx, sessions.CreateRequest{Agent: "mock", WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	return c, info
}

// A pacer this runner keeps for a reader on another runner moves with
// that reader's word, and goes once the reader has said nothing for
// paceLease: a reader that went away without a word holds nothing back.
func TestPacerForAReaderElsewhereExpires(t *testing.T) {
	c, info := serveOneSession(t)
	if err := c.paceFor(request{Session: info.ID, From: "r1"}, time.Now()); !errors.Is(err, sessions.ErrInvalidRequest) {
		t.Fatalf("a pacer without its id: %v, want ErrInvalidRequest", err)
	}
	if err := c.paceFor(request{Session: "ses_none", Pace: "p0", From: "r1"}, time.Now()); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("a pacer of no session: %v, want ErrNotFound", err)
	}
	pacers := func() int {
		c.pacers.mu.Lock()
		defer c.pacers.mu.Unlock()
		return len(c.pacers.byID)
	}
	opened := time.Now()
	for _, seq := range []uint64{1, 5} { // opened, then moved: one pacer
		if err := c.paceFor(request{Session: info.ID, Pace: "p1", From: "r1", LastSeq: seq}, opened); err != nil {
			t.Fatal(err)
		}
	}
	if n := pacers(); n != 1 {
		t.Fatalf("%d pacers after a reader's two words, want 1", n)
	}
	c.expirePacers(opened.Add(paceLease / 2))
	if pacers() != 1 {
		t.Fatal("a pacer heard from within its lease went")
	}
	c.expirePacers(opened.Add(paceLease + time.Second))
	if pacers() != 0 {
		t.Fatal("a pacer not heard from in its lease is still held")
	}
}

// A reader's word that reaches this runner after the reader let go of its
// pacer (sent before, or retried after a timeout) does not open the pacer
// again; the id is forgotten once no such word can still come.
func TestLateWordDoesNotReopenAPacer(t *testing.T) {
	c, info := serveOneSession(t)
	held := func() (pacers, closed int) {
		c.pacers.mu.Lock()
		defer c.pacers.mu.Unlock()
		return len(c.pacers.byID), len(c.pacers.closed)
	}
	word := request{Session: info.ID, Pace: "p1", From: "r1", LastSeq: 1}
	opened := time.Now()
	if err := c.paceFor(word, opened); err != nil {
		t.Fatal(err)
	}
	c.unpaceFor(word.Pace, opened.Add(time.Second))
	word.LastSeq = 3
	if err := c.paceFor(word, opened.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if pacers, _ := held(); pacers != 0 {
		t.Fatalf("%d pacers after a late word, want 0: the reader let go", pacers)
	}
	c.expirePacers(opened.Add(paceLease / 2))
	if _, closed := held(); closed != 1 {
		t.Fatalf("%d ids let go remembered within the lease, want 1", closed)
	}
	c.expirePacers(opened.Add(paceLease + 2*time.Second))
	if _, closed := held(); closed != 0 {
		t.Fatalf("%d ids let go remembered past the lease, want 0", closed)
	}
}

// A command goes to the runner the registry names. A runner whose view
// lags (it names a runner that does not have the session) is told so by
// that runner, reads the registry again, and gets its answer from the
// session's runner; a session the registry does not know is not found.
func TestCommandsFollowTheRegistry(t *testing.T) {
	fleets := openCluster(t, 3)
	other, owner, asker := serve(t, fleets[0]), serve(t, fleets[1]), serve(t, fleets[2])
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	info, err := owner.createLocal(ctx, sessions.CreateRequest{Agent: "mock", WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for { // until the asker's view has the entry, which the stale one replaces
		if s, ok := asker.reg.session(info.ID); ok && s.Runner == "r1" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the asker's view never listed the session")
		case <-time.After(10 * time.Millisecond):
		}
	}
	for _, wrong := range []string{other.f.cfg.Name, "r9"} { // a runner without it, and none
		stale, _ := asker.reg.session(info.ID)
		stale.Runner, stale.rev = wrong, stale.rev-1 // as a view that lags behind the bucket
		asker.reg.mu.Lock()
		asker.reg.sessions[info.ID] = stale
		asker.reg.mu.Unlock()
		if _, err := asker.Messages(ctx, info.ID); err != nil {
			t.Fatalf("a command sent by a view that names %s: %v", wrong, err)
		}
		if s, _ := asker.reg.session(info.ID); s.Runner != "r1" {
			t.Fatalf("after the command the asker's view names %q, want r1", s.Runner)
		}
	}
	if _, err := asker.Messages(ctx, "ses_nobody"); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("a command for a session nobody has: %v, want ErrNotFound", err)
	}
}

// A hold request that lands after its holder let go (the answer was lost,
// so the holder released what it could not know it had) takes no hold;
// the id is forgotten once no request can still be on its way.
func TestLateHoldTakesNothing(t *testing.T) {
	c, info := serveOneSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	held := func() (holds, released int) {
		c.holds.mu.Lock()
		defer c.holds.mu.Unlock()
		return len(c.holds.byID), len(c.holds.released)
	}
	req := request{Session: info.ID, Hold: "h1", From: "r1", Grace: time.Minute}
	if err := c.holdFor(ctx, req); err != nil {
		t.Fatal(err)
	}
	let := time.Now()
	c.releaseFor(req.Hold, let)
	if err := c.holdFor(ctx, req); err != nil { // the same request, late
		t.Fatal(err)
	}
	if holds, released := held(); holds != 0 || released != 1 {
		t.Fatalf("after a late hold: %d holds and %d released, want 0 and 1", holds, released)
	}
	c.forgetReleased(let.Add(forgetReleasedAfter / 2))
	if _, released := held(); released != 1 {
		t.Fatal("a hold let go was forgotten while a late request could still come")
	}
	c.forgetReleased(let.Add(forgetReleasedAfter + time.Second))
	if _, released := held(); released != 0 {
		t.Fatal("a hold let go is remembered for ever")
	}
}

// A host's hold on a session elsewhere that gets no answer is let go at
// once on the session's runner (it may have been taken); one the
// session's runner refused is not.
func TestUnansweredHoldIsLetGo(t *testing.T) {
	fleets := openCluster(t, 2)
	owner, asker := serve(t, fleets[0]), serve(t, fleets[1])
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	info, err := owner.createLocal(ctx, sessions.CreateRequest{Agent: "mock", WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	released := func() int {
		owner.holds.mu.Lock()
		defer owner.holds.mu.Unlock()
		return len(owner.holds.released)
	}
	if _, err := asker.Hold(ctx, info.ID, 0); !errors.Is(err, sessions.ErrInvalidRequest) {
		t.Fatalf("a hold without a grace: %v, want ErrInvalidRequest", err)
	}
	expired, cancelExpired := context.WithDeadline(ctx, time.Now())
	defer cancelExpired()
	if _, err := asker.Hold(expired, info.ID, time.Minute); err == nil {
		t.Fatal("a hold with no time to wait for its answer succeeded")
	}
	for released() != 1 {
		select {
		case <-ctx.Done():
			t.Fatalf("the session's runner remembers %d holds let go, want 1: the unanswered one", released())
		case <-time.After(10 * time.Millisecond):
		}
	}
	release, err := asker.Hold(ctx, info.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if n := released(); n != 2 {
		t.Fatalf("%d holds let go after a host let go of its own, want 2", n)
	}
}

// The fleet's feed numbers every event the stream holds, its end is the
// last of them, and a reader from any position, inside a message or
// between two, gets exactly the events after it.
func TestFeedResumesFromAnyPosition(t *testing.T) {
	f := openLone(t, "r0")
	l := f.Log(openLog(t))
	publishing(t, f)
	appendEvents(t, l, "s1", agent.KindSessionStarted, agent.KindTurnStarted, agent.KindItemDelta)
	appendEvents(t, l, "s2", agent.KindSessionStarted)
	syncStream(t, f)
	appendEvents(t, l, "s1", agent.KindItemDelta, agent.KindTurnCompleted)
	syncStream(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	end, err := f.feedEnd(ctx)
	if err != nil {
		t.Fatal(err)
	}
	feed := func(after uint64) (out []sessions.FeedEvent) {
		for fe, err := range f.feed(ctx, after) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fe)
			if fe.Pos == end {
				return out
			}
		}
		return out
	}
	all := feed(0)
	if len(all) != 6 {
		t.Fatalf("the feed from its start holds %d events, want 6", len(all))
	}
	start, err := f.feedStart(ctx)
	if err != nil || start != all[0].Pos {
		t.Fatalf("FeedStart = %d, %v; the first event is at %d", start, err, all[0].Pos)
	}
	for i := range all[:len(all)-1] {
		rest := feed(all[i].Pos)
		if len(rest) != len(all)-i-1 || rest[0].Pos != all[i+1].Pos {
			t.Fatalf("the feed after %d: %v, want the %d events from %d", all[i].Pos, rest, len(all)-i-1, all[i+1].Pos)
		}
	}
	for fe, err := range f.feed(ctx, 1<<63) {
		if !errors.Is(err, ErrFeedPosition) {
			t.Fatalf("a feed after 2^63: %v, %v; want ErrFeedPosition", fe, err)
		}
		break
	}
}
