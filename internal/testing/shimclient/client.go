package shimclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// Client calls a shim at Base (http://host:port) as the backend does:
// JSON bodies, no browser headers, and its Token (when set) as a bearer.
type Client struct {
	T       testing.TB
	Base    string
	AgentID string
	Token   string
}

// Call posts body (a value or raw string) to path and decodes the reply
// into out; it returns the status.
func (c *Client) Call(method, path string, body any, out any) int {
	c.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			c.T.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		c.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		var d struct {
			Detail string `json:"detail"`
		}
		if json.Unmarshal(data, &d) != nil || d.Detail == "" {
			c.T.Errorf("%s %s: %d without a {\"detail\"} body: %s", method, path, resp.StatusCode, data)
		}
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			c.T.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

// Must is Call that fails the test on a status other than want.
func (c *Client) Must(want int, method, path string, body any, out any) {
	c.T.Helper()
	var raw json.RawMessage
	if got := c.Call(method, path, body, &raw); got != want {
		c.T.Fatalf("%s %s: %d, want %d: %s", method, path, got, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.T.Fatal(err)
		}
	}
}

// Stream is one WS /events connection; every frame is validated, the
// sequence of each run checked (1, 2, 3, … without a gap), and a run
// that ended (lifecycle paused, killed or crashed) must send nothing
// more: the backend scores what follows as the agent's own work, and an
// error or an abandoned completion after a pause costs the agent trust.
type Stream struct {
	t        testing.TB
	ws       *websocket.Conn
	cancel   context.CancelFunc
	ch       chan Envelope
	done     chan struct{}
	mu       sync.Mutex
	All      []Envelope
	lastSeq  map[string]int64
	ended    map[string]string // run → the lifecycle action that ended it
	errs     []string
	closeErr error
}

// Events connects to WS /events with the query (e.g. "runId=R&after=N":
// then run R's events are expected from N+1).
func (c *Client) Events(query string) *Stream { return c.events(query, false) }

// EventsLate connects to a stream that may begin mid-run: the first
// event's sequence is taken as it comes, the rest checked after it.
func (c *Client) EventsLate(query string) *Stream { return c.events(query, true) }

func (c *Client) events(query string, late bool) *Stream {
	c.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	url := "ws" + strings.TrimPrefix(c.Base, "http") + "/events"
	if query != "" {
		url += "?" + query
	}
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	var opts *websocket.DialOptions
	if c.Token != "" {
		opts = &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + c.Token}}}
	}
	ws, _, err := websocket.Dial(dctx, url, opts)
	if err != nil {
		cancel()
		c.T.Fatalf("dial %s: %v", url, err)
	}
	ws.SetReadLimit(16 << 20)
	s := &Stream{t: c.T, ws: ws, cancel: cancel, ch: make(chan Envelope, 1<<16), done: make(chan struct{}), lastSeq: map[string]int64{}, ended: map[string]string{}}
	if q, err := neturl.ParseQuery(query); err == nil && q.Get("runId") != "" {
		s.lastSeq[q.Get("runId")], _ = strconv.ParseInt(q.Get("after"), 10, 64)
	}
	go func() {
		defer close(s.done)
		defer close(s.ch)
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				s.mu.Lock()
				s.closeErr = err
				s.mu.Unlock()
				return
			}
			env, err := Parse(data, c.AgentID)
			s.mu.Lock()
			if err != nil {
				s.errs = append(s.errs, fmt.Sprintf("invalid event: %v: %s", err, data))
			}
			// Each run counts from 1 without a gap.
			if late && len(s.All) == 0 {
				s.lastSeq[env.RunID] = env.SourceSequence - 1
			}
			if last := s.lastSeq[env.RunID]; env.SourceSequence != last+1 {
				s.errs = append(s.errs, fmt.Sprintf("run %s: sequence %d after %d", env.RunID, env.SourceSequence, last))
			}
			s.lastSeq[env.RunID] = env.SourceSequence
			s.checkEnded(env)
			s.All = append(s.All, env)
			s.mu.Unlock()
			s.ch <- env
		}
	}()
	c.T.Cleanup(s.Close)
	return s
}

// checkEnded notes a run's end and flags anything the run sends after
// it. Called with s.mu held.
func (s *Stream) checkEnded(env Envelope) {
	if how, ok := s.ended[env.RunID]; ok {
		s.errs = append(s.errs, fmt.Sprintf("run %s: %s (sequence %d) after lifecycle %s", env.RunID, env.Type(), env.SourceSequence, how))
		return
	}
	if env.Type() == "lifecycle" && slices.Contains(runEnds, env.Str("action")) {
		s.ended[env.RunID] = env.Str("action")
	}
}

// Seen is every event read so far.
func (s *Stream) Seen() []Envelope {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Envelope(nil), s.All...)
}

// Close ends the connection and reports what was wrong with the stream.
func (s *Stream) Close() {
	s.cancel()
	_ = s.ws.CloseNow()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.errs {
		s.t.Error(e)
	}
	s.errs = nil
}

// CloseErr is why the stream ended (after it did).
func (s *Stream) CloseErr() error {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeErr
}

// Next is the next event, within timeout.
func (s *Stream) Next(timeout time.Duration) Envelope {
	s.t.Helper()
	select {
	case e, ok := <-s.ch:
		if !ok {
			s.t.Fatalf("the stream ended: %v", s.CloseErr())
		}
		return e
	case <-time.After(timeout):
		s.t.Fatalf("no event for %s", timeout)
	}
	return Envelope{}
}

// Until reads until an event of type typ (decision/<subtype> for
// decisions) and returns everything read, that one last.
func (s *Stream) Until(typ string, timeout time.Duration) []Envelope {
	s.t.Helper()
	var seen []Envelope
	for {
		e := s.Next(timeout)
		seen = append(seen, e)
		if e.Type() == typ {
			return seen
		}
	}
}

// Child is a `tether shim` process launched as the backend launches
// shims: AGENT_PORT=0 and AGENT_BOOTSTRAP in its environment, the port
// from the first stdout line that is JSON with a numeric port, then
// GET /health until it answers.
type Child struct {
	Cmd  *exec.Cmd
	Port int
	// Token is the shim's token, from TETHER_SHIM_TOKEN in env or the
	// bootstrap's shimToken ("" for none): Launch's health checks send it.
	Token  string
	stderr *testenv.SyncBuffer
	exited chan error
}

// Stderr is what the shim wrote to stderr so far.
func (c *Child) Stderr() string {
	return c.stderr.String()
}

// Launch starts the shim command and waits for it to be healthy (30 s,
// as the backend).
func Launch(t testing.TB, env []string, bootstrap string, name string, args ...string) *Child {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(append(os.Environ(), env...), "AGENT_PORT=0", "AGENT_BOOTSTRAP="+bootstrap)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	ch := &Child{Cmd: cmd, Token: tokenOf(env, bootstrap), stderr: &testenv.SyncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = ch.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ports := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		announced := false
		for sc.Scan() {
			var line struct {
				Port *float64 `json:"port"`
			}
			if !announced && json.Unmarshal(sc.Bytes(), &line) == nil && line.Port != nil {
				announced = true
				ports <- int(*line.Port)
			}
		}
		ch.exited <- cmd.Wait()
	}()
	t.Cleanup(func() { ch.Stop(t) })
	select {
	case ch.Port = <-ports:
	case err := <-ch.exited:
		ch.exited <- err
		t.Fatalf("the shim exited before announcing its port: %v\n%s", err, ch.Stderr())
	case <-time.After(30 * time.Second):
		t.Fatalf("no port announced in 30 s\n%s", ch.Stderr())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://localhost:%d/health", ch.Port), nil)
		if ch.Token != "" {
			req.Header.Set("Authorization", "Bearer "+ch.Token)
		}
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return ch
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not healthy in 30 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tokenOf is the shim token a launch gives: the last TETHER_SHIM_TOKEN
// of env, else the bootstrap's shimToken.
func tokenOf(env []string, bootstrap string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "TETHER_SHIM_TOKEN="); ok {
			return v
		}
	}
	var boot struct {
		ShimToken string `json:"shimToken"`
	}
	_ = json.Unmarshal([]byte(bootstrap), &boot)
	return boot.ShimToken
}

// Client is a client of the child at http://localhost:port, with its token.
func (c *Child) Client(t testing.TB, agentID string) *Client {
	return &Client{T: t, Base: fmt.Sprintf("http://localhost:%d", c.Port), AgentID: agentID, Token: c.Token}
}

// Stop sends SIGTERM, as the backend does, and waits for the exit (20 s,
// then SIGKILL).
func (c *Child) Stop(t testing.TB) {
	if c.Cmd.ProcessState != nil {
		return
	}
	_ = c.Cmd.Process.Signal(terminate)
	select {
	case err := <-c.exited:
		c.exited <- err
		if err != nil {
			t.Errorf("the shim exited with %v\n%s", err, c.Stderr())
		}
	case <-time.After(20 * time.Second):
		_ = c.Cmd.Process.Kill()
		t.Errorf("the shim did not stop within 20 s of SIGTERM\n%s", c.Stderr())
		<-c.exited
	}
}
