package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/transport/remote"
)

// healthLog records OnHealth calls.
type healthLog struct {
	mu   sync.Mutex
	seen []remote.Health
}

func (h *healthLog) add(v remote.Health) {
	h.mu.Lock()
	h.seen = append(h.seen, v)
	h.mu.Unlock()
}

func (h *healthLog) get() []remote.Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]remote.Health(nil), h.seen...)
}

// waitFor waits until the log holds want (in order) from index from.
func (h *healthLog) waitFor(t *testing.T, from int, want ...remote.Health) {
	t.Helper()
	eventually(t, 20*time.Second, fmt.Sprintf("health %v from %d", want, from), func() bool {
		got := h.get()
		if len(got) < from+len(want) {
			return false
		}
		for i, w := range want {
			if got[from+i] != w {
				t.Fatalf("health went %v, want %v from %d", got, want, from)
			}
		}
		return true
	})
}

func payloadType(line string) string {
	var p struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(line), &p)
	return p.Type
}

// sdkLines are the agent lines an SDK yields as messages: the log's
// payloads without the control protocol.
func sdkLines(payloads []string) []string {
	var out []string
	for _, p := range payloads {
		switch payloadType(p) {
		case "control_request", "control_response", "control_cancel_request":
			continue
		}
		out = append(out, p)
	}
	return out
}

// receiveTurn collects one turn's messages through the SDK.
func receiveTurn(t *testing.T, ctx context.Context, client *claude.Client, onMessage func(claude.Message)) []string {
	t.Helper()
	var raws []string
	for msg, err := range client.Receive(ctx) {
		if err != nil {
			t.Fatalf("after %d messages: %v", len(raws), err)
		}
		raws = append(raws, string(msg.Raw()))
		if onMessage != nil {
			onMessage(msg)
		}
	}
	if len(raws) == 0 || payloadType(raws[len(raws)-1]) != "result" {
		t.Fatalf("turn ended without a result after %d messages", len(raws))
	}
	return raws
}

func checkSame(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("the SDK saw %d messages, the runner logged %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("message %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

func TestSDKOverRunner(t *testing.T) {
	tr := startRunner(t, runnerOpts{scenario: "demo"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := claude.Connect(ctx, claude.Options{
		Runner:         &claude.RunnerOptions{URL: tr.url(), WorkspaceID: "basic"},
		PermissionMode: claude.PermissionMode("acceptEdits"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Query(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	raws := receiveTurn(t, ctx, client, nil)
	checkSame(t, raws, sdkLines(tr.payloads(client.SessionID())))
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	if tr.live(client.SessionID()) {
		t.Fatal("session still live after Close (stop)")
	}
	if _, err := os.Stat(filepath.Join(tr.workspaceDir("basic"), "hello.txt")); err != nil {
		t.Fatal(err)
	}
}

// Through a proxy that cuts the connection at random points, many times,
// the SDK sees every message exactly once and in order, without an error.
func TestSDKReconnectsWithoutLoss(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const n = 2000
	tr := startRunner(t, runnerOpts{scenario: "text", env: map[string]string{mockclaude.EnvN: strconv.Itoa(n), mockclaude.EnvDelayMS: "0"}})
	px := startProxy(t, tr.addr, seed)
	var health healthLog
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := claude.Connect(ctx, claude.Options{Transport: &remote.Transport{
		URL: px.url(), WorkspaceID: "flaky", ReconnectFor: 30 * time.Second,
		PingInterval: time.Second, OnHealth: health.add,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.Query(ctx, "stream"); err != nil {
		t.Fatal(err)
	}
	// Cut only once the prompt has reached the agent (its output flows):
	// a line the host writes just before a cut can be lost (see report).
	raws := receiveTurn(t, ctx, client, func(m claude.Message) {
		if _, ok := m.(*claude.AssistantMessage); ok {
			px.arm(1000, 60000)
		}
	})
	px.disarm()
	kills := px.killCount()
	t.Logf("%d messages, %d cuts, health %v", len(raws), kills, health.get())
	if kills < 20 {
		t.Errorf("only %d cuts", kills)
	}
	var assistants int
	uuids := map[string]bool{}
	for _, r := range raws {
		if payloadType(r) == "assistant" {
			assistants++
		}
		var p struct {
			UUID string `json:"uuid"`
		}
		_ = json.Unmarshal([]byte(r), &p)
		if uuids[p.UUID] {
			t.Fatalf("message seen twice: %s", r)
		}
		uuids[p.UUID] = true
	}
	if assistants != n {
		t.Fatalf("%d assistant messages, want %d", assistants, n)
	}
	checkSame(t, raws, sdkLines(tr.payloads(client.SessionID())))

	// The session goes on live.
	if err := client.Query(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	raws = append(raws, receiveTurn(t, ctx, client, nil)...)
	checkSame(t, raws, sdkLines(tr.payloads(client.SessionID())))
	if err := client.Err(); err != nil {
		t.Fatal(err)
	}
}

// A permission request the host did not get (the connection dropped just
// before it) is replayed on reconnect, and the answer, given after another
// drop, still reaches the CLI: the turn completes.
func TestPermissionRequestSurvivesDisconnects(t *testing.T) {
	tr := startRunner(t, runnerOpts{scenario: "demo"})
	px := startProxy(t, tr.addr, 1)
	px.killBefore(`can_use_tool`)
	var health healthLog
	var calls atomic.Int32
	asked := make(chan claude.PermissionRequest, 4)
	release := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := claude.Connect(ctx, claude.Options{
		Runner: &claude.RunnerOptions{URL: px.url(), WorkspaceID: "perm", ReconnectFor: 30 * time.Second, OnHealth: health.add},
		CanUseTool: func(ctx context.Context, req claude.PermissionRequest) (claude.PermissionResult, error) {
			calls.Add(1)
			asked <- req
			select {
			case <-release:
				return claude.Allow{}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.Query(ctx, "write the file"); err != nil {
		t.Fatal(err)
	}
	var req claude.PermissionRequest
	select {
	case req = <-asked:
	case <-ctx.Done():
		t.Fatal("no permission request")
	}
	if px.killCount() != 1 {
		t.Fatalf("%d cuts before the request arrived, want the one that withheld it", px.killCount())
	}
	if req.ToolName != "Write" {
		t.Fatalf("request %+v", req)
	}
	health.waitFor(t, 0, remote.Degraded, remote.Healthy)

	// Drop again while the answer is pending; answer once reconnected.
	px.killAll()
	health.waitFor(t, 2, remote.Degraded, remote.Healthy)
	close(release)

	raws := receiveTurn(t, ctx, client, nil)
	var result struct {
		Subtype string `json:"subtype"`
		IsError bool   `json:"is_error"`
	}
	_ = json.Unmarshal([]byte(raws[len(raws)-1]), &result)
	if result.IsError || result.Subtype != "success" {
		t.Fatalf("result %s", raws[len(raws)-1])
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("CanUseTool called %d times", n)
	}
	data, err := os.ReadFile(filepath.Join(tr.workspaceDir("perm"), "hello.txt"))
	if err != nil || !strings.Contains(string(data), "write the file") {
		t.Fatalf("hello.txt: %q, %v", data, err)
	}
	checkSame(t, raws, sdkLines(tr.payloads(client.SessionID())))
}

// The turn ends while the host is away, then the grace period ends the
// session; the transport's reconnect restarts it, and the frames logged
// while away (replayed before the new ready) still reach the SDK.
func TestSDKResumesRestartedSession(t *testing.T) {
	const grace = 2 * time.Second // longer than the turn (0.5 s)
	tr := startRunner(t, runnerOpts{scenario: "slow", grace: grace, env: map[string]string{mockclaude.EnvDelayMS: "10"}})
	px := startProxy(t, tr.addr, 1)
	var health healthLog
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := claude.Connect(ctx, claude.Options{Transport: &remote.Transport{
		URL: px.url(), WorkspaceID: "away", ReconnectFor: 30 * time.Second, OnHealth: health.add,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.Query(ctx, "take a while"); err != nil {
		t.Fatal(err)
	}
	var raws []string
	for msg, err := range client.Receive(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, string(msg.Raw()))
		break // system/init: the turn is under way
	}
	id := client.SessionID()
	px.setPaused(true)
	px.killAll()
	eventually(t, 20*time.Second, "the session to end after the grace period", func() bool {
		live := tr.live(id)
		return !live
	})
	logged := sdkLines(tr.payloads(id))
	if payloadType(logged[len(logged)-1]) != "result" {
		t.Fatalf("the turn did not end while the host was away: last line %s", logged[len(logged)-1])
	}
	px.setPaused(false)
	raws = append(raws, receiveTurn(t, ctx, client, nil)...)
	checkSame(t, raws, logged)
	if live := tr.live(id); !live {
		t.Fatal("the session was not restarted")
	}
	if got := health.get(); len(got) < 2 || got[len(got)-1] != remote.Healthy {
		t.Fatalf("health %v", got)
	}
}

// OnHealth: healthy → degraded on a drop → healthy once reconnected →
// unhealthy after giving up, which the reader sees as ErrGaveUp.
func TestHealth(t *testing.T) {
	tr := startRunner(t, runnerOpts{scenario: "text"})
	px := startProxy(t, tr.addr, 1)
	var health healthLog
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := (&remote.Transport{URL: px.url(), WorkspaceID: "health", ReconnectFor: time.Second,
		PingInterval: 200 * time.Millisecond, OnHealth: health.add}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h, ok := conn.(interface{ Health() remote.Health })
	if !ok {
		t.Fatalf("%T has no Health", conn)
	}
	if h.Health() != remote.Healthy {
		t.Fatalf("health %v after Connect", h.Health())
	}
	px.killAll()
	health.waitFor(t, 0, remote.Degraded, remote.Healthy)
	if h.Health() != remote.Healthy {
		t.Fatalf("health %v after reconnecting", h.Health())
	}

	px.setPaused(true)
	px.killAll()
	health.waitFor(t, 2, remote.Degraded, remote.Unhealthy)
	_, err = conn.Read(ctx)
	if !errors.Is(err, remote.ErrGaveUp) {
		t.Fatalf("Read after giving up: %v", err)
	}
	if h.Health() != remote.Unhealthy {
		t.Fatalf("health %v after giving up", h.Health())
	}
	if got := health.get(); len(got) != 4 {
		t.Fatalf("health went %v", got)
	}
}

// A connection that stops answering pings (not closed, just silent) is
// dropped and replaced.
func TestHealthSilentConnection(t *testing.T) {
	tr := startRunner(t, runnerOpts{scenario: "text"})
	px := startProxy(t, tr.addr, 1)
	var health healthLog
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := (&remote.Transport{URL: px.url(), WorkspaceID: "silent", ReconnectFor: 10 * time.Second,
		PingInterval: 200 * time.Millisecond, OnHealth: health.add}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	px.freeze()
	health.waitFor(t, 0, remote.Degraded)
	px.thaw()
	health.waitFor(t, 1, remote.Healthy)
}

func TestRefused(t *testing.T) {
	tokens, err := auth.Load(auth.LoadOptions{Getenv: func(string) string { return "" }, Tokens: []string{"0123456789abcdef-token"}})
	if err != nil {
		t.Fatal(err)
	}
	tr := startRunner(t, runnerOpts{scenario: "text", wrap: func(h http.Handler) http.Handler { return auth.Middleware(tokens, nil, h) }})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := (&remote.Transport{URL: tr.url(), WorkspaceID: "w"}).Connect(ctx); !errors.Is(err, remote.ErrUnauthorized) {
		t.Fatalf("no token: %v", err)
	}
	if _, err := (&remote.Transport{URL: tr.url(), WorkspaceID: "w", Token: "wrong-token-wrong-token"}).Connect(ctx); !errors.Is(err, remote.ErrUnauthorized) {
		t.Fatalf("wrong token: %v", err)
	}
	var re *remote.RunnerError
	if _, err := (&remote.Transport{URL: tr.url(), WorkspaceID: "../x", Token: "0123456789abcdef-token"}).Connect(ctx); !errors.As(err, &re) || re.Code != "invalid_workspace_id" {
		t.Fatalf("bad workspace: %v", err)
	}
	if _, err := (&remote.Transport{URL: tr.url(), WorkspaceID: "w", Token: "0123456789abcdef-token", SessionOpts: json.RawMessage(`{"cli_path":"/bin/sh"}`)}).Connect(ctx); !errors.As(err, &re) || re.Code != "invalid_session_opts" {
		t.Fatalf("bad options: %v", err)
	}
	conn, err := (&remote.Transport{URL: tr.url(), WorkspaceID: "w", Token: "0123456789abcdef-token"}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

// A runner that restarts (deploy, crash-free shutdown) tells its hosts it
// is going away; the transport keeps trying, the new runner resumes the
// session from its log, and the SDK goes on without an error.
func TestSDKSurvivesRunnerRestart(t *testing.T) {
	opts := runnerOpts{scenario: "text", env: map[string]string{mockclaude.EnvN: "20"}}
	tr := startRunner(t, opts)
	px := startProxy(t, tr.addr, 1)
	var health healthLog
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := claude.Connect(ctx, claude.Options{Transport: &remote.Transport{
		URL: px.url(), WorkspaceID: "phoenix", ReconnectFor: 30 * time.Second, OnHealth: health.add,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.Query(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	raws := receiveTurn(t, ctx, client, nil)
	id := client.SessionID()

	tr.stop()
	health.waitFor(t, 0, remote.Degraded)
	opts.dir = tr.root
	tr2 := startRunner(t, opts)
	px.setTarget(tr2.addr)
	if got := health.get(); len(got) > 1 && got[1] == remote.Unhealthy {
		t.Fatalf("gave up: %v", client.Err())
	}
	health.waitFor(t, 1, remote.Healthy)

	if err := client.Query(ctx, "after"); err != nil {
		t.Fatal(err)
	}
	raws = append(raws, receiveTurn(t, ctx, client, nil)...)
	checkSame(t, raws, sdkLines(tr2.payloads(id)))
	if client.SessionID() != id {
		t.Fatalf("session %s became %s", id, client.SessionID())
	}
	if err := client.Err(); err != nil {
		t.Fatal(err)
	}
}

// A runner refusing a resume whose last seq is past its log is a typed,
// final error; other runner errors do not match it.
func TestLastSeqAheadIsTyped(t *testing.T) {
	err := fmt.Errorf("reconnect: %w", &remote.RunnerError{Code: "last_seq_ahead", Details: "last_seq 90, the session's last frame is 40"})
	if !errors.Is(err, remote.ErrLastSeqAhead) {
		t.Fatalf("%v does not match ErrLastSeqAhead", err)
	}
	if errors.Is(&remote.RunnerError{Code: "internal_error"}, remote.ErrLastSeqAhead) {
		t.Fatal("internal_error matches ErrLastSeqAhead")
	}
}
