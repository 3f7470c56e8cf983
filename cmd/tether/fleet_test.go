package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
)

// fleetLostWithin is what the fleet promises: a runner that stops
// answering has its sessions ended within it.
const fleetLostWithin = 10 * time.Second

// freePorts reserves n loopback ports and frees them for a child to take.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// natsNodeConfig is one node of a three-node cluster on loopback, with
// passwords for clients and routes, as docs/fleet.md shows.
func natsNodeConfig(t *testing.T, dir, name string, client, route int, routes []int) string {
	t.Helper()
	var urls []string
	for _, p := range routes {
		urls = append(urls, fmt.Sprintf("nats://route:route-secret@127.0.0.1:%d", p))
	}
	conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
authorization { user: tether, password: fleet-secret }
jetstream { store_dir: %q }
`, name, client, filepath.Join(dir, "jetstream"))
	if len(routes) > 0 {
		conf += fmt.Sprintf(`cluster {
  name: tether
  listen: 127.0.0.1:%d
  authorization { user: route, password: route-secret }
  routes: [%s]
}
`, route, strings.Join(urls, ", "))
	}
	path := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fleetRunner is one runner of a test fleet: its process, and what it
// needs to be started again on the same data.
type fleetRunner struct {
	*serveProc
	name string
	args []string
	dir  string
}

// startFleet starts n runners, each with an embedded NATS node of one
// cluster, all at once (the cluster needs its quorum before any runner
// is ready), and waits until each listens.
func startFleet(t *testing.T, n int) []*fleetRunner {
	t.Helper()
	ports := freePorts(t, 2*n)
	runners := make([]*fleetRunner, n)
	for i := range n {
		name := fmt.Sprintf("r%d", i)
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var routes []int
		for j := range n {
			if j != i {
				routes = append(routes, ports[n+j])
			}
		}
		conf := natsNodeConfig(t, dir, name, ports[i], ports[n+i], routes)
		runners[i] = &fleetRunner{name: name, dir: dir,
			args: []string{"--nats-config", conf, "--runner-name", name, "--data", filepath.Join(dir, "data")}}
	}
	startRunners(t, runners)
	return runners
}

// startRunners starts (or starts again) runners at once and waits for
// each to listen.
func startRunners(t *testing.T, runners []*fleetRunner) {
	t.Helper()
	addrs := make([]<-chan string, len(runners))
	for i, r := range runners {
		r.serveProc, addrs[i] = spawnServe(t, fleetServeCmd(t, r))
	}
	for i, r := range runners {
		r.awaitAddr(addrs[i])
	}
}

func fleetServeCmd(t *testing.T, r *fleetRunner) *exec.Cmd {
	cmd := exec.Command(tetherPath(), append([]string{"serve", "--addr", "127.0.0.1:0", "--sandbox", "off"}, r.args...)...)
	cmd.Env = cleanEnv("TETHER_AUTH_TOKEN="+testToken, "XDG_RUNTIME_DIR="+t.TempDir())
	cmd.Dir = r.dir
	return cmd
}

// waitRunners waits until every runner is in the registry, as any runner
// sees it.
func waitRunners(t *testing.T, c *client.Client, names ...string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		list, err := c.Runners(context.Background())
		var got []string
		for _, r := range list {
			if r.State == "active" {
				got = append(got, r.Name)
			}
		}
		if err == nil && len(got) == len(names) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("runners %v not all active within %v: %v %v", names, waitLimit, got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// seqsInOrder says whether events are seq 1, 2, 3... with none missing
// or repeated.
func seqsInOrder(events []agent.Event) error {
	for i, e := range events {
		if e.Seq != int64(i+1) {
			return fmt.Errorf("event %d has seq %d", i+1, e.Seq)
		}
	}
	return nil
}

// Thirty sessions created through one runner land on all three; each is
// driven to completion through another; an approval of a session on the
// third is resolved through the first and reaches the agent. Every
// session's log, read through any runner, is whole and in order.
func TestFleetPlacesAndRoutes(t *testing.T) {
	fl := startFleet(t, 3)
	a, b, c := apiClient(fl[0].serveProc), apiClient(fl[1].serveProc), apiClient(fl[2].serveProc)
	waitRunners(t, a, "r0", "r1", "r2")
	ctx := context.Background()

	var ids []string
	on := map[string]int{}
	for i := range 30 {
		s, err := a.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: fmt.Sprintf("w%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
		on[s.Runner]++
	}
	if len(on) != 3 || on["r0"] < 5 || on["r1"] < 5 || on["r2"] < 5 {
		t.Fatalf("30 sessions placed as %v, want them spread over r0, r1 and r2", on)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- driveThrough(ctx, b, id)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}

	s, err := a.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "approve", Runner: "r2"})
	if err != nil || s.Runner != "r2" {
		t.Fatalf("create on r2: %+v %v", s, err)
	}
	w := watch(t, c, s.ID)
	if err := b.Prompt(ctx, s.ID, "run the tool REQUEST_APPROVAL"); err != nil {
		t.Fatal(err)
	}
	req := w.until("approval.requested", kind(agent.KindApprovalRequested))
	// The registry learns of it a moment after the event is in the stream.
	for listed := false; !listed; {
		pending, err := a.Approvals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		listed = slices.ContainsFunc(pending, func(p agent.Approval) bool { return p.ID == req.Approval.ID })
		if !listed && time.Since(req.Time) > waitLimit {
			t.Fatalf("runner r0 does not list the approval of a session on r2: %v", pending)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := a.Resolve(ctx, s.ID, req.Approval.ID, client.Answer{Decision: agent.Allow}); err != nil {
		t.Fatal(err)
	}
	tool := w.until("the tool call's end", func(e agent.Event) bool {
		return e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemToolCall
	})
	if tool.Item.Status != agent.ItemDone {
		t.Fatalf("the tool call allowed through r0 ended %s", tool.Item.Status)
	}
	w.until("turn.completed", kind(agent.KindTurnCompleted))
}

// driveThrough runs one turn of a session through c and checks its log,
// as c reads it, is whole and in order.
func driveThrough(ctx context.Context, c *client.Client, id string) error {
	ctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	if err := c.Prompt(ctx, id, "hello"); err != nil {
		return fmt.Errorf("prompt %s: %w", id, err)
	}
	var events []agent.Event
	for e, err := range c.Events(ctx, id, 0, 0) {
		if err != nil {
			return fmt.Errorf("events of %s: %w", id, err)
		}
		events = append(events, e)
		if e.Kind == agent.KindTurnCompleted {
			break
		}
	}
	if err := seqsInOrder(events); err != nil {
		return fmt.Errorf("session %s through another runner: %w: %s", id, err, kinds(events))
	}
	if last := events[len(events)-1]; last.Kind != agent.KindTurnCompleted || last.Turn.Status != agent.TurnCompleted {
		return fmt.Errorf("session %s: its turn did not complete: %s", id, kinds(events))
	}
	return nil
}

// A client streams a session that lives on the third runner through the
// first, drops, and goes on through the second from the last seq it saw:
// it sees every event once, in order.
func TestFleetStreamResumesOnAnotherRunner(t *testing.T) {
	fl := startFleet(t, 3)
	a, b := apiClient(fl[0].serveProc), apiClient(fl[1].serveProc)
	waitRunners(t, a, "r0", "r1", "r2")
	ctx := context.Background()
	s, err := a.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "w", Runner: "r2", Prompt: "one"})
	if err != nil {
		t.Fatal(err)
	}
	var seen []agent.Event
	rctx, cancel := context.WithTimeout(ctx, waitLimit)
	for e, err := range a.Events(rctx, s.ID, 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, e)
		if len(seen) == 7 {
			break // the connection drops mid-turn
		}
	}
	cancel()
	if err := b.Prompt(ctx, s.ID, "two"); err != nil && !errors.Is(err, agent.ErrTurnInProgress) {
		t.Fatal(err)
	}
	turns := 0
	rctx, cancel = context.WithTimeout(ctx, waitLimit)
	defer cancel()
	for e, err := range b.Events(rctx, s.ID, uint64(seen[len(seen)-1].Seq), 0) {
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, e)
		if e.Kind == agent.KindTurnCompleted {
			if turns++; turns == 1 {
				if err := b.Prompt(ctx, s.ID, "two"); err != nil && !errors.Is(err, agent.ErrTurnInProgress) {
					t.Fatal(err)
				}
			} else {
				break
			}
		}
	}
	if err := seqsInOrder(seen); err != nil {
		t.Fatalf("across the reconnect: %v: %s", err, kinds(seen))
	}
}

// kill -9 of a runner mid-turn: its sessions end with runner_lost within
// the promised time, as another runner reads them, once; the survivors'
// sessions lose and repeat nothing.
func TestFleetRunnerKilledMidTurn(t *testing.T) {
	fl := startFleet(t, 3)
	a, c := apiClient(fl[0].serveProc), apiClient(fl[2].serveProc)
	waitRunners(t, a, "r0", "r1", "r2")
	ctx := context.Background()
	doomed, err := a.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "doomed", Runner: "r1", Prompt: "SLOW"})
	if err != nil {
		t.Fatal(err)
	}
	asked, err := a.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "asked", Runner: "r1",
		Prompt: "REQUEST_APPROVAL"})
	if err != nil {
		t.Fatal(err)
	}
	survivor, err := a.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "survivor", Runner: "r2"})
	if err != nil {
		t.Fatal(err)
	}
	wd, wa := watch(t, c, doomed.ID), watch(t, c, asked.ID)
	wd.until("the slow command", func(e agent.Event) bool { return e.Kind == agent.KindItemStarted && e.Item.Type == agent.ItemCommand })
	wa.until("approval.requested", kind(agent.KindApprovalRequested))

	if err := fl[1].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	survived := make(chan error, 1)
	go func() { survived <- driveThrough(ctx, a, survivor.ID) }()

	end := wd.until("session.ended", kind(agent.KindSessionEnded))
	if took := time.Since(killed); took > fleetLostWithin {
		t.Errorf("the killed runner's session ended %v after the kill, want within %v", took, fleetLostWithin)
	}
	if end.Session == nil || end.Session.Reason != agent.ReasonRunnerLost {
		t.Fatalf("session.ended %+v, want reason %s", end.Session, agent.ReasonRunnerLost)
	}
	resolved := wa.until("approval.resolved", kind(agent.KindApprovalResolved))
	if resolved.Resolution.Cause != agent.CauseRunnerLost || resolved.Resolution.Decision != agent.Deny {
		t.Fatalf("the lost session's approval was resolved %+v", resolved.Resolution)
	}
	wa.until("session.ended", kind(agent.KindSessionEnded))
	if err := seqsInOrder(wd.seen); err != nil {
		t.Fatalf("the lost session's events: %v: %s", err, kinds(wd.seen))
	}
	if err := <-survived; err != nil {
		t.Fatal(err)
	}
	list, err := a.Runners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(list, func(r client.Runner) bool { return r.Name == "r1" }); i < 0 || list[i].State != "lost" {
		t.Fatalf("runners after the kill: %+v, want r1 lost", list)
	}
	got, err := a.Get(ctx, doomed.ID)
	if err != nil || got.State != "ended" {
		t.Fatalf("the lost session as the registry has it: %+v %v", got, err)
	}
}

// Drain: no new session goes to a draining runner while its sessions go
// on; `tether fleet status` shows it; undone, it takes sessions again.
func TestFleetDrain(t *testing.T) {
	fl := startFleet(t, 3)
	a := apiClient(fl[0].serveProc)
	waitRunners(t, a, "r0", "r1", "r2")
	ctx := context.Background()
	kept, err := a.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "kept", Runner: "r2"})
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + fl[1].addr
	if r := tether(t, t.TempDir(), "", []string{"TETHER_AUTH_TOKEN=" + testToken}, "fleet", "drain", "r2", "--runner", url); r.code != 0 {
		t.Fatalf("tether fleet drain: %d %s", r.code, r.stderr)
	}
	if _, err := a.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "x", Runner: "r2"}); err == nil {
		t.Fatal("a draining runner took a session asked of it by name")
	}
	for i := range 6 {
		s, err := a.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: fmt.Sprintf("d%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if s.Runner == "r2" {
			t.Fatalf("session %d placed on the draining runner", i)
		}
	}
	if err := driveThrough(ctx, a, kept.ID); err != nil {
		t.Fatalf("a draining runner's session: %v", err)
	}
	st := tether(t, t.TempDir(), "", []string{"TETHER_AUTH_TOKEN=" + testToken}, "fleet", "status", "--runner", url)
	if st.code != 0 || !strings.Contains(st.stdout, "r2") || !strings.Contains(st.stdout, "draining") {
		t.Fatalf("tether fleet status: %d\n%s%s", st.code, st.stdout, st.stderr)
	}
	if err := a.Drain(ctx, "r2", false); err != nil {
		t.Fatal(err)
	}
	waitRunners(t, a, "r0", "r1", "r2")
	if s, err := a.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "back", Runner: "r2"}); err != nil || s.Runner != "r2" {
		t.Fatalf("after undoing the drain: %+v %v", s, err)
	}
}

// A runner told to join NATS that does not answer, or that refuses its
// credentials, or given a node configuration that lets anyone in, exits
// with a sentence that says which.
func TestFleetBadNATS(t *testing.T) {
	dir := t.TempDir()
	port := freePorts(t, 1)[0]
	env := []string{"TETHER_AUTH_TOKEN=" + testToken}
	r := tether(t, dir, "", env, "serve", "--addr", "127.0.0.1:0", "--sandbox", "off",
		"--nats", fmt.Sprintf("nats://127.0.0.1:%d", port))
	if r.code == 0 || !strings.Contains(r.stderr, "no NATS server answers") {
		t.Fatalf("a NATS URL nobody answers: exit %d:\n%s", r.code, r.stderr)
	}

	open := filepath.Join(dir, "open.conf")
	if err := os.WriteFile(open, []byte(fmt.Sprintf("listen: 127.0.0.1:%d\njetstream { store_dir: %q }\n", port, filepath.Join(dir, "js"))), 0o600); err != nil {
		t.Fatal(err)
	}
	r = tether(t, dir, "", env, "serve", "--addr", "127.0.0.1:0", "--sandbox", "off", "--nats-config", open)
	if r.code == 0 || !strings.Contains(r.stderr, "without authentication") {
		t.Fatalf("a node open to anyone: exit %d:\n%s", r.code, r.stderr)
	}

	fl := startFleet(t, 1)
	natsPort := strings.TrimPrefix(strings.Fields(mustRead(t, fl[0].args[1]))[3], "127.0.0.1:")
	r = tether(t, dir, "", env, "serve", "--addr", "127.0.0.1:0", "--sandbox", "off",
		"--nats", "nats://tether:wrong@127.0.0.1:"+natsPort)
	if r.code == 0 || !strings.Contains(r.stderr, "refused the credentials") {
		t.Fatalf("wrong credentials: exit %d:\n%s", r.code, r.stderr)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
