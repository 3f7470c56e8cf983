package main

import (
	"bufio"
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
)

// apiClient is a sessions API client of p with the test's token.
func apiClient(p *serveProc) *client.Client {
	return &client.Client{BaseURL: "http://" + p.addr, Token: testToken, Timeout: waitLimit}
}

// watcher follows one session's events in the background, from seq 1 to
// the session's end.
type watcher struct {
	t    *testing.T
	id   string
	ch   chan agent.Event
	errc chan error
	seen []agent.Event
}

func watch(t *testing.T, c *client.Client, id string) *watcher {
	t.Helper()
	w := &watcher{t: t, id: id, ch: make(chan agent.Event), errc: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(w.ch)
		for e, err := range c.Events(ctx, id, 0, 0) {
			if err != nil {
				w.errc <- err
				return
			}
			select {
			case w.ch <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// until waits for an event that matches and returns it.
func (w *watcher) until(what string, match func(agent.Event) bool) agent.Event {
	w.t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case e, ok := <-w.ch:
			if !ok {
				var err error
				select {
				case err = <-w.errc:
				default:
				}
				w.t.Fatalf("session %s: its events ended (%v) before %s: %s", w.id, err, what, kinds(w.seen))
			}
			w.seen = append(w.seen, e)
			if match(e) {
				return e
			}
		case <-timeout:
			w.t.Fatalf("session %s: no %s within %v: %s", w.id, what, waitLimit, kinds(w.seen))
		}
	}
}

// toEnd reads the rest of the session's events, up to session.ended.
func (w *watcher) toEnd() []agent.Event {
	w.t.Helper()
	w.until("session.ended", func(e agent.Event) bool { return e.Kind == agent.KindSessionEnded })
	return w.seen
}

func kinds(events []agent.Event) string {
	var out []string
	for _, e := range events {
		out = append(out, string(e.Kind))
	}
	return strings.Join(out, " ")
}

func kind(k agent.Kind) func(agent.Event) bool {
	return func(e agent.Event) bool { return e.Kind == k }
}

// logged reads a finished session's events from the runner's log.
func logged(t *testing.T, c *client.Client, id string) []agent.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var out []agent.Event
	for e, err := range c.Events(ctx, id, 0, 0) {
		if err != nil {
			t.Fatalf("events of %s: %v", id, err)
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("event %d of %s: %v", e.Seq, id, err)
		}
		out = append(out, e)
	}
	return out
}

// metric sums the samples of a metric (every label set) in a scrape.
func metric(scrape, name string) float64 {
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(scrape))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// waitCommitted waits until the runner's event log has on disk every event
// it logged (once each: the runner-wide feed is the log's own numbering).
func waitCommitted(t *testing.T, p *serveProc) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		req, _ := http.NewRequest("GET", "http://"+p.addr+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&body)
		resp.Body.Close()
		events, committed := metric(body.String(), "tether_events_total"), metric(body.String(), "tether_eventlog_committed_events_total")
		if events > 0 && committed >= events {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the event log committed %v of %v events", committed, events)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createMock starts a mock session in a workspace of its own, with a
// first prompt unless prompt is empty.
func createMock(t *testing.T, c *client.Client, workspace, prompt string) string {
	t.Helper()
	s, err := c.Create(context.Background(), client.CreateRequest{Agent: "mock", WorkspaceID: workspace, Prompt: prompt})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// A runner killed with SIGKILL leaves items open: a command still running
// and a tool call waiting for its approval. Restarted on the same data, it
// ends those sessions in their logs as a SIGTERM would have: the approval
// denied, each open item completed (the command failed with the output it
// had streamed, the tool call declined), then the turn failed and
// session.ended, all read over the sessions API.
func TestServeRestartCompletesOpenItems(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	args := []string{"--cli", mockCLI(t, "text", 0), "--data", data}
	p := startServe(t, cleanEnv(), args...)
	c := apiClient(p)
	running := createMock(t, c, "running", "SLOW")
	asking := createMock(t, c, "asking", "REQUEST_APPROVAL")
	cmd := watch(t, c, running).until("the command's output", func(e agent.Event) bool {
		return e.Kind == agent.KindItemDelta && e.Delta.Field == agent.FieldOutput
	})
	approval := watch(t, c, asking).until("the approval", kind(agent.KindApprovalRequested)).Approval
	waitCommitted(t, p)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(waitLimit)

	p = startServe(t, cleanEnv(), args...)
	c = apiClient(p)
	for _, tc := range []struct {
		id, item string
		status   agent.ItemStatus
	}{
		{running, cmd.Delta.ItemID, agent.ItemFailed},
		{asking, approval.ItemID, agent.ItemDeclined},
	} {
		events := logged(t, c, tc.id)
		started := slices.IndexFunc(events, func(e agent.Event) bool {
			return e.Kind == agent.KindItemStarted && e.Item.ID == tc.item
		})
		if started < 0 {
			t.Fatalf("%s: item %s not in the log: %s", tc.id, tc.item, kinds(events))
		}
		if open := openItems(events); len(open) != 0 {
			t.Errorf("%s: items never completed: %v\n%s", tc.id, open, kinds(events))
		}
		done := slices.IndexFunc(events, func(e agent.Event) bool {
			return e.Kind == agent.KindItemCompleted && e.Item.ID == tc.item
		})
		if done < 0 {
			t.Errorf("%s: item %s never completed: %s", tc.id, tc.item, kinds(events))
			continue
		}
		turnEnd := slices.IndexFunc(events, kind(agent.KindTurnCompleted))
		n := len(events)
		if events[done].Item.Status != tc.status || events[done].TurnID != events[started].TurnID ||
			turnEnd != n-2 || done > turnEnd || events[turnEnd].Turn.Status != agent.TurnFailed ||
			events[n-1].Kind != agent.KindSessionEnded {
			t.Errorf("%s: after the restart: %s\n%+v", tc.id, kinds(events), events[max(started, 0):])
		}
		if tc.id == running && (events[done].Item.Command == nil || events[done].Item.Command.Output != "mock turn 1\n") {
			t.Errorf("the failed command lost its output: %+v", events[done].Item.Command)
		}
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
