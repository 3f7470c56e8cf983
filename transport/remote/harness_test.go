package remote_test

import (
	"context"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/frontend/protov1"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
)

func TestMain(m *testing.M) {
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockclaude.Main())
	}
	goleak.VerifyTestMain(m)
}

// testRunner is a runner on loopback whose agent is the mock CLI.
type testRunner struct {
	t    *testing.T
	addr string // host:port
	core *runnertest.Core
	log  *eventlog.Bolt
	root string
	stop func() // shuts the runner down (also at cleanup)
}

type runnerOpts struct {
	scenario string
	grace    time.Duration
	env      map[string]string
	wrap     func(http.Handler) http.Handler
	dir      string // data directory to reuse (a restart); "" = new
}

func startRunner(t *testing.T, o runnerOpts) *testRunner {
	t.Helper()
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	env := map[string]string{
		mockclaude.EnvMain: "1", mockclaude.EnvScenario: o.scenario, mockclaude.EnvDelayMS: "5",
		"GORACE": "atexit_sleep_ms=0", "PATH": os.Getenv("PATH"),
	}
	maps.Copy(env, o.env)
	if o.grace == 0 {
		o.grace = time.Minute
	}
	core, err := runnertest.NewCore(dir, claudecli.Config{CLIPath: os.Args[0], ShutdownGrace: 500 * time.Millisecond, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	elog := core.Log
	v1s := &protov1.Server{Sessions: core.Sessions, GracePeriod: o.grace, PingInterval: time.Second}
	var h http.Handler = v1s
	if o.wrap != nil {
		h = o.wrap(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/sessions", h)
	srv := httptest.NewServer(mux)
	stop := sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		core.Sessions.Drain(ctx)
		if err := core.Close(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		srv.Close()
	})
	t.Cleanup(stop)
	return &testRunner{t: t, addr: strings.TrimPrefix(srv.URL, "http://"), core: core, log: elog, root: dir, stop: stop}
}

func (tr *testRunner) url() string { return "ws://" + tr.addr + "/sessions" }

// payloads is what the log holds for a session: the agent's lines, each
// on the event it made, in order.
func (tr *testRunner) payloads(id string) []string {
	tr.t.Helper()
	var out []string
	for ev, err := range tr.log.Read(context.Background(), id, 0) {
		if err != nil {
			tr.t.Fatal(err)
		}
		e, err := agent.ParseEvent(ev.Payload)
		if err != nil {
			tr.t.Fatalf("logged event %d: %v", ev.Seq, err)
		}
		if len(e.Raw) > 0 && e.Raw[0] == '{' {
			out = append(out, string(e.Raw))
		}
	}
	return out
}

// workspaceDir is where the runner puts workspace id.
func (tr *testRunner) workspaceDir(id string) string {
	real, err := filepath.EvalSymlinks(filepath.Join(tr.root, "ws"))
	if err != nil {
		tr.t.Fatal(err)
	}
	return filepath.Join(real, id)
}

// proxy is a TCP proxy on loopback that can cut its connections: all at
// once (killAll), after a random number of bytes towards the client
// (arm), or just before it would pass on a given pattern (killBefore).
// While paused it refuses connections (accepts and closes them).
type proxy struct {
	t      *testing.T
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   map[*pair]bool
	rng     *rand.Rand
	armed   bool
	minCut  int
	maxCut  int
	pattern []byte
	swallow bool
	paused  bool
	frozen  chan struct{} // non-nil: nothing goes to clients until closed
	kills   int
	wg      sync.WaitGroup
}

type pair struct {
	client, server net.Conn
	left           int    // bytes to the client before the cut; -1: none
	tail           []byte // the last bytes sent to the client
}

func startProxy(t *testing.T, target string, seed uint64) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target, conns: map[*pair]bool{}, rng: rand.New(rand.NewPCG(seed, 7))}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) url() string { return "ws://" + p.ln.Addr().String() + "/sessions" }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		paused := p.paused
		p.mu.Unlock()
		if paused {
			c.Close()
			continue
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		s, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		pr := &pair{client: c, server: s, left: -1}
		p.mu.Lock()
		p.conns[pr] = true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.up(pr)
		go p.down(pr)
	}
}

func (p *proxy) up(pr *pair) {
	defer p.wg.Done()
	defer p.cut(pr)
	buf := make([]byte, 4096)
	for {
		n, err := pr.client.Read(buf)
		p.mu.Lock()
		swallow := p.swallow
		p.mu.Unlock()
		if n > 0 && !swallow {
			if _, werr := pr.server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// swallowUp makes the host's bytes vanish on the way (a connection that
// died without either side noticing yet) until turned off.
func (p *proxy) swallowUp(on bool) {
	p.mu.Lock()
	p.swallow = on
	p.mu.Unlock()
}

// down copies runner → client, cutting where told to.
func (p *proxy) down(pr *pair) {
	defer p.wg.Done()
	defer p.cut(pr)
	buf := make([]byte, 4096)
	for {
		n, err := pr.server.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			p.mu.Lock()
			if p.pattern != nil {
				window := append(append([]byte{}, pr.tail...), chunk...)
				if i := indexOf(window, p.pattern); i >= 0 {
					p.pattern = nil // one-shot
					p.kills++
					p.mu.Unlock()
					return // the frame holding the pattern never arrives
				}
			}
			if p.armed && pr.left < 0 {
				pr.left = p.minCut + p.rng.IntN(p.maxCut-p.minCut+1)
			}
			send, cut := chunk, false
			if p.armed && pr.left <= len(chunk) {
				send, cut = chunk[:pr.left], true
				p.kills++
			}
			if pr.left >= 0 {
				pr.left -= len(send)
			}
			frozen := p.frozen
			p.mu.Unlock()
			if frozen != nil {
				<-frozen
			}
			if _, werr := pr.client.Write(send); werr != nil || cut {
				return
			}
			pr.tail = append(pr.tail, send...)
			if len(pr.tail) > 256 {
				pr.tail = pr.tail[len(pr.tail)-256:]
			}
		}
		if err != nil {
			return
		}
	}
}

func indexOf(b, pattern []byte) int { return strings.Index(string(b), string(pattern)) }

func (p *proxy) cut(pr *pair) {
	p.mu.Lock()
	delete(p.conns, pr)
	p.mu.Unlock()
	pr.client.Close()
	pr.server.Close()
}

// arm cuts every connection after a random number of bytes towards the
// client, in [minCut, maxCut]; disarm stops it.
func (p *proxy) arm(minCut, maxCut int) {
	p.mu.Lock()
	p.armed, p.minCut, p.maxCut = true, minCut, maxCut
	p.mu.Unlock()
}

func (p *proxy) disarm() {
	p.mu.Lock()
	p.armed = false
	for pr := range p.conns {
		pr.left = -1
	}
	p.mu.Unlock()
}

// killBefore cuts the connection carrying pattern towards the client,
// before it passes; once.
func (p *proxy) killBefore(pattern string) {
	p.mu.Lock()
	p.pattern = []byte(pattern)
	p.mu.Unlock()
}

func (p *proxy) killAll() {
	p.mu.Lock()
	prs := make([]*pair, 0, len(p.conns))
	for pr := range p.conns {
		prs = append(prs, pr)
	}
	p.kills += len(prs)
	p.mu.Unlock()
	for _, pr := range prs {
		p.cut(pr)
	}
}

// setTarget sends new connections elsewhere (a restarted runner).
func (p *proxy) setTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

func (p *proxy) setPaused(v bool) {
	p.mu.Lock()
	p.paused = v
	p.mu.Unlock()
}

func (p *proxy) killCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kills
}

// freeze stops passing anything to clients (connections stay open) until
// thaw.
func (p *proxy) freeze() {
	p.mu.Lock()
	if p.frozen == nil {
		p.frozen = make(chan struct{})
	}
	p.mu.Unlock()
}

func (p *proxy) thaw() {
	p.mu.Lock()
	if p.frozen != nil {
		close(p.frozen)
		p.frozen = nil
	}
	p.mu.Unlock()
}

func (p *proxy) close() {
	p.thaw()
	p.ln.Close()
	p.killAll()
	p.wg.Wait()
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// live reports whether session id is live (not ended).
func (tr *testRunner) live(id string) bool {
	info, err := tr.core.Sessions.Get(id)
	return err == nil && info.State != sessions.StateEnded
}
