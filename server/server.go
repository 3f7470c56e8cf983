// Package server assembles a runner process: the core, its event log,
// workspaces, the driver of every registered agent kind (driver/all) under
// the runner's policy, the protocol v1 front end and the sessions API
// (canonical sessions and durable approvals) behind authentication, health
// endpoints, TLS and graceful shutdown; and tether daemon's core and
// tether shim's. cmd/tether only parses flags into a Config and calls Run.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetherhq/tether/frontend/protov1"
	"github.com/tetherhq/tether/frontend/sessionsapi"
	"github.com/tetherhq/tether/metrics"
	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/runner/fleet"
	"github.com/tetherhq/tether/runner/sessions"
)

// DefaultAddr is where a runner listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7420"

// Config is everything `tether serve` can be told. Relative paths are
// resolved against the working directory when Run starts.
type Config struct {
	Addr          string
	WorkspaceRoot string
	DataDir       string
	// HomesRoot holds each workspace's private agent home; empty:
	// DataDir/homes. A fleet whose runners share it and WorkspaceRoot can
	// resume a lost runner's sessions on another runner.
	HomesRoot string
	// CLIPath is Claude Code's CLI; empty looks claude up.
	CLIPath string
	// CLIs are agent CLIs by kind (CLIKinds), from --cli NAME=PATH; a
	// kind not named is looked up on PATH, and left out, as unavailable,
	// when it is not found. A CLI named that cannot be used stops Run.
	CLIs map[string]string
	// AllowUntestedAgents lets agent CLIs of another version than the one
	// Tether is tested with (driver.Kind.TestedVersion) run, with a
	// warning in the log.
	AllowUntestedAgents bool
	// TurnTimeout ends a turn of an agent that takes a limit (Codex,
	// OpenCode) that runs longer, as failed (OpenCode retries a failing
	// model API forever); 0: none.
	TurnTimeout time.Duration
	TLSCert     string
	TLSKey      string
	Sandbox     bool
	// SandboxReadOnly are paths agents may read besides the sandbox's
	// minimal view of the system (--sandbox-ro): a shared toolchain, a
	// package cache. Each must exist, and none may hold the token file or
	// the TLS files.
	SandboxReadOnly []string
	// AllowToolNetwork lets sessions ask for network in Bash commands.
	AllowToolNetwork bool
	// AgentEnv are extra variables of this process's environment to hand
	// to agents (API keys and the like are picked up by prefix already).
	AgentEnv          []string
	GracePeriod       time.Duration
	ShutdownTimeout   time.Duration
	MaxSessions       int
	MaxConnsPerToken  int
	MaxFrameSize      int64
	InitializeTimeout time.Duration
	// ApprovalTimeout is how long an approval of the sessions API waits
	// before it is denied; zero means until its session ends.
	ApprovalTimeout time.Duration
	// LogCommitWindow is the event log's group-commit window
	// (eventlog.Options.FlushInterval; 0: its default of 2 ms): longer
	// means fewer fsyncs, and more of the last frames lost with a crash.
	LogCommitWindow time.Duration
	// Auth says where the tokens hosts authenticate with come from. With
	// none, Run uses a token it generates and keeps in DataDir (see
	// auth.LoadOrGenerate), and a listen address beyond loopback is
	// refused: remote hosts need a token given to them on purpose.
	Auth auth.LoadOptions
	// ReloadTokens, when a value arrives on it, makes Run read the hosts'
	// tokens again from where they came from at start (Auth, or the
	// generated token's file, which is made anew if it was removed) and
	// close every connection of a token no longer there. A reload that
	// fails, or that would leave no token, keeps the tokens in force.
	ReloadTokens <-chan struct{}
	// RecordDir is where, with a generated token, Run records which file
	// holds it, for hosts on this machine (auth.LocalToken); "" means
	// auth.DefaultRecordDir().
	RecordDir string
	// MetricsAddr, when set, serves /metrics on a listener of its own at
	// that address, without authentication (for a scraper on a private
	// network); empty serves it on Addr behind the hosts' tokens.
	MetricsAddr string
	// MetricsReady, if set, receives the metrics listener's address.
	MetricsReady func(addr string)
	// Fleet, when set, joins the runner to a fleet of runners on NATS
	// JetStream (see runner/fleet and docs/fleet.md); nil: it runs alone
	// and starts no NATS.
	Fleet  *fleet.Config
	Logger *slog.Logger
	// Ready, if set, receives the listening address once serving.
	Ready func(addr string)
}

// Run serves until ctx ends, then shuts down gracefully.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, err := cfg.resolved()
	if err != nil {
		return err
	}
	tokens, generated, err := hostTokens(cfg)
	if err != nil {
		return err
	}
	// Listening before the core opens gives a fleet the runner's address;
	// connections wait in the backlog until it serves.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen: %w", err)
	}
	defer ln.Close()
	if cfg.Fleet != nil && cfg.Fleet.Addr == "" {
		fc := *cfg.Fleet
		fc.Addr = ln.Addr().String()
		cfg.Fleet = &fc
	}
	parts, err := assemble(cfg, log)
	if err != nil {
		return err
	}
	defer parts.log.Close()
	defer parts.proxies.Close()
	defer parts.approvals.Close()
	defer parts.leaveFleet() // after the sessions ended, before the log closes
	parts.stopExpiry = expireApprovals(parts.sessions, log)
	defer parts.stopExpiry() // at once on any early return; shutdown stops it first otherwise
	stopMetrics, err := serveMetrics(cfg, parts.metrics, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	var shuttingDown atomic.Bool
	// Requests get a context of their own, cancelled once the runner has
	// shut down: a WebSocket is hijacked, so http.Server.Shutdown neither
	// waits for nor ends it, and one still waiting for init would
	// otherwise outlive Run.
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	parts.cancelRequests = cancelBase
	addr := ln.Addr().String()
	if generated != nil {
		defer announceGenerated(cfg, addr, generated, log)()
	}
	stopReloads := watchTokenReloads(base, cfg, tokens, generated != nil, log)
	defer stopReloads()
	h := routes(parts, tokens, cfg, log, &shuttingDown)
	if auth.IsLoopback(addr) {
		// Against DNS rebinding. Beyond loopback the runner cannot know
		// the names hosts use for it; its token guards it there.
		h = auth.LoopbackHosts(log, h)
	}
	srv := &http.Server{Handler: parts.handlers.track(h),
		ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return base },
		ConnContext: sessionsapi.ConnContext, ErrorLog: httpErrorLog(log)}
	serveErr := make(chan error, 1)
	go func() { serveErr <- serve(srv, ln, cfg) }()
	log.Info("runner listening", "addr", addr, "tls", cfg.TLSCert != "", "sandbox", cfg.Sandbox, "tokens", tokens.IDs())
	if cfg.Ready != nil {
		cfg.Ready(addr)
	}
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	shuttingDown.Store(true)
	return shutdown(srv, parts, cfg, log, serveErr)
}

func serve(srv *http.Server, ln net.Listener, cfg Config) error {
	var err error
	if cfg.TLSCert != "" {
		err = srv.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey)
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// stopTimeout bounds ending the sessions once their turns' grace is over
// (their agents stopping, their last events logged), and the wait for the
// requests still open after.
const stopTimeout = 10 * time.Second

// shutdown: take no new sessions or turns, let the turns in progress of
// every front end finish up to the timeout (their clients may still
// follow them and answer their approvals), interrupt the ones left, end
// the sessions, stop serving, flush the log.
func shutdown(srv *http.Server, p *parts, cfg Config, log *slog.Logger, serveErr chan error) error {
	timeout := cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	grace, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	log.Info("runner shutting down", "timeout", timeout)
	// Every front end's turns get the same grace: they are the one core's.
	p.sessions.Drain(grace)
	p.stopExpiry()
	stop, cancelStop := context.WithTimeout(context.Background(), stopTimeout)
	defer cancelStop()
	// Sessions end before the server stops: their event streams (plain
	// HTTP requests, and the hijacked WebSockets of protocol v1) finish
	// with them.
	err := p.sessions.Shutdown(stop)
	// Every session is over. A session's event stream ends on its own once
	// it has written the session's end, which it may not have yet: it gets
	// a moment for that. What is still open then (connections before init,
	// the runner-wide feed, a client that does not read) ends now, and Run
	// returns only once no handler runs.
	drain, cancelDrain := context.WithTimeout(stop, streamsDrain)
	p.handlers.waitStreams(drain)
	cancelDrain()
	p.cancelRequests()
	_ = srv.Shutdown(stop)
	p.handlers.wait()
	<-serveErr
	return err
}

// expireApprovals applies the default decision to overdue approvals every
// second until the returned stop is called.
func expireApprovals(m *sessions.Manager, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				if _, err := m.Expire(ctx); err != nil {
					log.Warn("expiring approvals", "err", err)
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// streamsDrain bounds the wait, once every session has ended, for their
// event streams to write the sessions' ends.
const streamsDrain = 2 * time.Second

// handlers tracks the HTTP handlers still running, hijacked ones included,
// and among them the streams of one session's events.
type handlers struct {
	mu        sync.Mutex
	stopped   bool
	wg        sync.WaitGroup
	streams   int
	noStreams chan struct{} // closed while streams is 0 (nil: never opened)
}

// sessionStream says whether r follows one session's events (Server-Sent
// Events or WebSocket): it ends on its own after the session's end.
func sessionStream(r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/sessions/")
	id, tail, _ := strings.Cut(rest, "/")
	return ok && r.Method == http.MethodGet && id != "" && tail == "events"
}

func (h *handlers) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		if h.stopped {
			h.mu.Unlock()
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		h.wg.Add(1)
		stream := sessionStream(r)
		if stream {
			if h.streams == 0 {
				h.noStreams = make(chan struct{})
			}
			h.streams++
		}
		h.mu.Unlock()
		defer h.wg.Done()
		if stream {
			defer h.streamDone()
		}
		next.ServeHTTP(w, r)
	})
}

func (h *handlers) streamDone() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.streams--; h.streams == 0 {
		close(h.noStreams)
	}
}

// waitStreams waits until no session's event stream runs, or ctx ends.
func (h *handlers) waitStreams(ctx context.Context) {
	h.mu.Lock()
	idle := h.noStreams
	open := h.streams > 0
	h.mu.Unlock()
	if !open {
		return
	}
	select {
	case <-idle:
	case <-ctx.Done():
	}
}

// wait refuses new requests and waits for the running ones.
func (h *handlers) wait() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	h.wg.Wait()
}

type parts struct {
	canonical
	v1         *protov1.Server
	metrics    *metrics.Metrics
	stopExpiry func()

	handlers       handlers
	cancelRequests context.CancelFunc
}

// hostTokens loads the tokens hosts authenticate with: the configured
// ones or, with none, a generated one (then generated is set). It creates
// the runner's directories, where a generated token is kept.
func hostTokens(cfg Config) (tokens *auth.Tokens, generated *auth.Generated, err error) {
	tokens, err = auth.Load(cfg.Auth)
	if err != nil {
		return nil, nil, err
	}
	if err := auth.RequireForAddr(cfg.Addr, tokens); err != nil {
		return nil, nil, err
	}
	if err := makeDirs(cfg); err != nil {
		return nil, nil, err
	}
	if !tokens.Empty() {
		return tokens, nil, nil
	}
	// Even on loopback a runner needs a token: every other user of the
	// machine, a web page on a name rebound to 127.0.0.1, and a sandboxed
	// agent (it shares loopback to reach the model API) could otherwise
	// open sessions.
	if generated, err = auth.LoadOrGenerate(cfg.DataDir); err != nil {
		return nil, nil, err
	}
	return generated.Tokens, generated, nil
}

// makeDirs creates the data and workspaces directories (private to the
// runner's user) if they are missing.
func makeDirs(cfg Config) error {
	for _, d := range []string{cfg.DataDir, cfg.WorkspaceRoot, cfg.HomesRoot} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}
	return nil
}

func assemble(cfg Config, log *slog.Logger) (_ *parts, err error) {
	p := &parts{metrics: metrics.New(metrics.Options{Process: true})}
	if p.canonical, err = openCanonical(cfg, log, canonicalOptions{onCommit: p.metrics.LogCommitted, observer: p.metrics,
		fleet: cfg.Fleet}); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	p.metrics.Watch(metrics.Sources{Sessions: p.sessions})
	// Protocol v1's sessions are Claude Code's: its lines name the agent.
	p.v1 = &protov1.Server{Sessions: p.core, MaxFrameSize: cfg.MaxFrameSize, GracePeriod: cfg.GracePeriod,
		Logger: log.With("agent", "claude")}
	return p, nil
}

// close releases what assemble opened, for a runner that does not start.
func (p *parts) close() { p.canonical.close() }

func routes(p *parts, tokens *auth.Tokens, cfg Config, log *slog.Logger, shuttingDown *atomic.Bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if shuttingDown.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	limiter := auth.NewLimiter(cfg.MaxConnsPerToken)
	mux.Handle("/sessions", auth.Middleware(tokens, log, p.metrics.Track("protocol_v1", limitPerToken(limiter, p.v1))))
	api := sessionsapi.Handler(sessionsapi.Config{Sessions: p.core, Logger: log, Observer: p.metrics.Delivery("sessions_api"),
		By: func(r *http.Request) string { id, _ := auth.IDFromContext(r.Context()); return id }})
	mux.Handle("/v1/", auth.Middleware(tokens, log, p.metrics.Track("sessions_api", limitPerToken(limiter, api))))
	if cfg.MetricsAddr == "" {
		mux.Handle("GET /metrics", auth.Middleware(tokens, log, p.metrics.Handler()))
	}
	mountConsole(mux)
	return mux
}

// limitPerToken caps concurrent connections per token.
func limitPerToken(l *auth.Limiter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := auth.IDFromContext(r.Context())
		release, ok := l.Acquire(id)
		if !ok {
			http.Error(w, `{"error":"too many connections for this token"}`, http.StatusTooManyRequests)
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}
