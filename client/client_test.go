package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/internal/testing/runnertest"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the mock claude CLI.
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockclaude.Main())
	}
	goleak.VerifyTestMain(m)
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Everything a host does, through the client, against the real API.
func TestClientJourney(t *testing.T) {
	base := runnertest.SessionsAPI(t, map[string]agent.Driver{"claude": runnertest.MockClaude("demo")})
	c := &client.Client{BaseURL: base}
	ctx := ctxFor(t)
	agents, err := c.Agents(ctx)
	if err != nil || !agents["claude"].Resume {
		t.Fatalf("agents %+v %v", agents, err)
	}
	s, err := c.Create(ctx, client.CreateRequest{Agent: "claude", WorkspaceID: "w1", Prompt: "hello"})
	if err != nil || s.ID == "" || s.Agent != "claude" {
		t.Fatalf("create %+v %v", s, err)
	}
	if err := c.Prompt(ctx, s.ID, "again"); !errors.Is(err, agent.ErrTurnInProgress) {
		t.Fatalf("prompt during a turn: %v", err)
	}
	var kinds []agent.Kind
	for e, err := range c.Events(ctx, s.ID, 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, e.Kind)
		switch e.Kind {
		case agent.KindApprovalRequested:
			pending, err := c.Approvals(ctx)
			if err != nil || len(pending) != 1 {
				t.Fatalf("approvals %+v %v", pending, err)
			}
			if _, err := c.Resolve(ctx, s.ID, e.Approval.ID, client.Answer{Decision: agent.Allow}); err != nil {
				t.Fatal(err)
			}
			_, err = c.Resolve(ctx, s.ID, e.Approval.ID, client.Answer{Decision: agent.Deny})
			var already *agent.AlreadyResolvedError
			if !errors.As(err, &already) || already.First.Decision != agent.Allow {
				t.Fatalf("second answer: %v", err)
			}
		case agent.KindTurnCompleted:
			if err := c.Close(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if kinds[0] != agent.KindSessionStarted || kinds[len(kinds)-1] != agent.KindSessionEnded {
		t.Fatalf("kinds %v", kinds)
	}
	items, err := c.Messages(ctx, s.ID)
	if err != nil || len(items) == 0 {
		t.Fatalf("messages %d %v", len(items), err)
	}
	if _, err := c.Get(ctx, "ses_nope"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	if _, err := c.Diff(ctx, s.ID); !errors.Is(err, agent.ErrUnsupported) {
		t.Fatalf("diff: %v", err)
	}
}

// A stream cut in the middle comes back by itself from the last seq it
// saw: every event once, in order.
func TestClientEventsReconnect(t *testing.T) {
	base := runnertest.SessionsAPI(t, map[string]agent.Driver{"claude": runnertest.MockClaude("text")})
	// A proxy that cuts every event stream after a few events.
	var cuts atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		if !strings.HasSuffix(r.URL.Path, "/events") {
			_, _ = copyAll(w, resp.Body, -1)
			return
		}
		cuts.Add(1)
		_, _ = copyAll(w, resp.Body, 3) // three events, then the line drops
	}))
	defer proxy.Close()
	c := &client.Client{BaseURL: proxy.URL, Backoff: time.Millisecond}
	ctx := ctxFor(t)
	s, err := c.Create(ctx, client.CreateRequest{Agent: "claude", WorkspaceID: "w1", Prompt: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for e, err := range c.Events(ctx, s.ID, 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, e.Seq)
		if e.Kind == agent.KindTurnCompleted {
			break
		}
	}
	for i, seq := range seqs {
		if seq != int64(i+1) {
			t.Fatalf("seqs %v", seqs)
		}
	}
	if cuts.Load() < 2 {
		t.Fatalf("the stream was never cut (%d connections)", cuts.Load())
	}
	_ = c.Close(ctx, s.ID)
}

// copyAll copies SSE events (blocks ending in a blank line) from r to w,
// at most n of them (n < 0: all), flushing each.
func copyAll(w http.ResponseWriter, r interface{ Read([]byte) (int, error) }, n int) (int, error) {
	buf := make([]byte, 1)
	events, newlines := 0, 0
	for n < 0 || events < n {
		k, err := r.Read(buf)
		if k == 1 {
			if _, werr := w.Write(buf); werr != nil {
				return events, werr
			}
			if buf[0] == '\n' {
				newlines++
				if newlines == 2 {
					events++
					w.(http.Flusher).Flush()
				}
			} else {
				newlines = 0
			}
		}
		if err != nil {
			return events, err
		}
	}
	return events, nil
}

// A wrong token is an error that says so.
func TestClientUnauthorized(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	defer srv.Close()
	_, err := (&client.Client{BaseURL: srv.URL, Token: "x"}).Sessions(ctxFor(t))
	if !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("err = %v", err)
	}
}

// The runner-wide feed through the client: both sessions' starts, with
// positions that resume.
func TestClientFeed(t *testing.T) {
	base := runnertest.SessionsAPI(t, map[string]agent.Driver{"claude": runnertest.MockClaude("demo")})
	c := &client.Client{BaseURL: base}
	ctx, stop := context.WithCancel(ctxFor(t))
	defer stop()
	a, err := c.Create(ctx, client.CreateRequest{Agent: "claude", WorkspaceID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Create(ctx, client.CreateRequest{Agent: "claude", WorkspaceID: "w2"})
	if err != nil {
		t.Fatal(err)
	}
	started := map[string]uint64{}
	for fe, err := range c.Feed(ctx, 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if fe.Event.Kind == agent.KindSessionStarted {
			started[fe.Event.SessionID] = fe.Pos
		}
		if len(started) == 2 {
			break
		}
	}
	if started[a.ID] == 0 || started[b.ID] == 0 || started[a.ID] == started[b.ID] {
		t.Fatalf("started at %v", started)
	}
	last := max(started[a.ID], started[b.ID])
	if err := c.Close(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	for fe, err := range c.Feed(ctx, last, 0) {
		if err != nil || fe.Pos != last+1 {
			t.Fatalf("resumed feed: %+v %v", fe, err)
		}
		break
	}
}

// A prompt's images go through the API to the agent; a bad one is an
// error matching agent.ErrInvalidImage.
func TestClientPromptImages(t *testing.T) {
	base := runnertest.SessionsAPI(t, map[string]agent.Driver{"mock": mock.New(mock.Config{})})
	c := &client.Client{BaseURL: base}
	ctx := ctxFor(t)
	s, err := c.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "img"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PromptImages(ctx, s.ID, "look", agent.Image{MediaType: "image/tiff", Data: []byte{1}}); !errors.Is(err, agent.ErrInvalidImage) {
		t.Fatalf("a tiff: %v", err)
	}
	if err := c.PromptImages(ctx, s.ID, "look", agent.Image{MediaType: "image/gif", Data: []byte("GIF89a")}); err != nil {
		t.Fatal(err)
	}
	replySays(ctx, t, c, s.ID, "You sent 1 image (image/gif 6 bytes).")
}

// A new session's first prompt takes images too.
func TestClientCreateWithImages(t *testing.T) {
	base := runnertest.SessionsAPI(t, map[string]agent.Driver{"mock": mock.New(mock.Config{})})
	c := &client.Client{BaseURL: base}
	ctx := ctxFor(t)
	if _, err := c.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "bad", Prompt: "look",
		Images: []agent.Image{{MediaType: "image/tiff", Data: []byte{1}}}}); !errors.Is(err, agent.ErrInvalidImage) {
		t.Fatalf("a tiff: %v", err)
	}
	s, err := c.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "img", Prompt: "look",
		Images: []agent.Image{{MediaType: "image/gif", Data: []byte("GIF89a")}}})
	if err != nil {
		t.Fatal(err)
	}
	replySays(ctx, t, c, s.ID, "You sent 1 image (image/gif 6 bytes).")
}

// replySays checks that the session's first turn's reply says want.
func replySays(ctx context.Context, t *testing.T, c *client.Client, id, want string) {
	t.Helper()
	for e, err := range c.Events(ctx, id, 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == agent.KindTurnCompleted {
			if !strings.Contains(e.Turn.Text, want) {
				t.Errorf("reply %q, want it to say %q", e.Turn.Text, want)
			}
			return
		}
	}
	t.Errorf("no turn.completed in the session's events")
}
