package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/runner/sessions"
)

// MaxBody is the largest request body accepted (413 beyond).
const MaxBody = 4 << 20

// Config configures a Server.
type Config struct {
	// Sessions runs the agent; Agent is the agent kind every run uses and
	// WorkspaceID the workspace its sessions work in.
	Sessions    sessions.Core
	Agent       string
	WorkspaceID string
	// Bootstrap is AGENT_BOOTSTRAP: artifacts are uploaded to its
	// endpoint when it has one, with their content read from Workspace,
	// the directory the agent works in.
	Bootstrap  Bootstrap
	Workspace  string
	HTTPClient *http.Client
	// ResumeOptions, when set, are the driver's start options for a
	// resume from a checkpoint whose conversation had `turns` turns (the
	// mock continues from that script position; the other agents resume
	// from their own session store and need none).
	ResumeOptions func(turns int) json.RawMessage
	// CheckpointSDK is the tag of the checkpoint union the agent's resume
	// state travels as: "claude" or "gemini" (its session id), "mock" (its script
	// position), else "openai" (runStateJson); empty means Agent.
	CheckpointSDK string
	// StateFile, when set, is where the shim keeps its runs' records
	// (each run's session, agent id and workstream, and the events of
	// the shim's own it put in: lifecycle, crashes, follow-up turns, the
	// uploaded artifacts' uris), so a shim started again on the same
	// data serves their streams from the log. Empty keeps them in memory.
	StateFile string
	// MaxRuns is how many runs' streams are kept (DefaultMaxRuns).
	MaxRuns int
	// StopTimeout bounds a graceful kill or pause (5 s when zero, as the
	// reference's SIGTERM grace); a kill's graceTimeoutMs overrides it.
	StopTimeout time.Duration
	// Usage, when set, reports what the agent uses for /health's
	// resourceUsage (its process tree and its workspace's disk); without
	// it, or when it fails, the shim's own memory is all /health tells.
	Usage func(ctx context.Context) (ResourceUsage, error)

	// Token, when set, is the secret every request must carry (see
	// ResolveToken); TokenSource names where it came from, for errors.
	Token       string
	TokenSource string
	// ListenHost is the host the shim listens on: a request's Host may
	// name it, as well as loopback. Beyond loopback it needs a Token.
	ListenHost string
	// MaxSubscribers caps the WS /events clients served at once
	// (DefaultMaxSubscribers).
	MaxSubscribers int

	Now    func() time.Time
	NewID  func() string
	Logger *slog.Logger
}

// Server is the shim of one agent. Its handler serves the HTTP endpoints
// and WS /events; Close ends the run and its goroutines.
type Server struct {
	cfg     Config
	runs    *runs
	started time.Time
	log     *slog.Logger
	// tokens is Config.Token's set (nil without one); listenHost is
	// Config.ListenHost without brackets ("" for every interface).
	tokens      *auth.Tokens
	listenHost  string
	subscribers atomic.Int64 // WS /events clients served now

	ctx    context.Context // ends the runs' goroutines on Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu serializes the lifecycle (spawn, kill, pause, resume) and
	// guards run and brief. A run's pump never takes it.
	mu    sync.Mutex
	run   *run
	brief AgentBrief // the current brief, with its updates

	qmu    sync.Mutex
	queued []string // context and brief updates for the next turn
}

// New returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Sessions == nil || cfg.Agent == "" || cfg.WorkspaceID == "" {
		return nil, errors.New("shim: Config needs Sessions, Agent and WorkspaceID")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = newUUID
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 5 * time.Second
	}
	if cfg.MaxSubscribers <= 0 {
		cfg.MaxSubscribers = DefaultMaxSubscribers
	}
	if cfg.ListenHost != "" {
		if err := CheckListen(cfg.ListenHost, cfg.Token); err != nil {
			return nil, err
		}
	}
	var tokens *auth.Tokens
	if cfg.Token != "" {
		source := cfg.TokenSource
		if source == "" {
			source = "Config.Token"
		}
		var err error
		if tokens, err = loadToken(cfg.Token, source); err != nil {
			return nil, err
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rs, err := openRuns(cfg.StateFile, cfg.MaxRuns)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{cfg: cfg, runs: rs, started: cfg.Now(), log: log, tokens: tokens,
		listenHost: bareHost(cfg.ListenHost), ctx: ctx, cancel: cancel}, nil
}

// PluginName is what handles and states report.
func (s *Server) PluginName() string { return "tether-" + s.cfg.Agent }

// Close stops the run (its session closed) and waits for the shim's
// goroutines; the WebSocket clients end with their requests.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	r := s.run
	s.mu.Unlock()
	var err error
	if r != nil {
		err = r.stop(ctx, "", true)
	}
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		err = errors.Join(err, ctx.Err())
	}
	return err
}

// Handler serves the shim's endpoints, to the backend only (see guard).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("POST /spawn", s.spawn)
	mux.HandleFunc("POST /kill", s.kill)
	mux.HandleFunc("POST /pause", s.pause)
	mux.HandleFunc("POST /resume", s.resume)
	mux.HandleFunc("POST /resolve", s.resolve)
	mux.HandleFunc("POST /checkpoint", s.checkpoint)
	mux.HandleFunc("POST /inject-context", s.injectContext)
	mux.HandleFunc("POST /update-brief", s.updateBrief)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		detail(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return s.recoverRequests(s.guard(mux))
}

func (s *Server) current() *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	status := StatusDone
	if r := s.current(); r != nil {
		status = r.getStatus()
	}
	now := s.cfg.Now()
	use := s.usage(r.Context())
	use.CollectedAt = utc(now)
	writeJSON(w, http.StatusOK, Health{Status: "healthy", AgentStatus: status, UptimeMs: now.Sub(s.started).Milliseconds(),
		ResourceUsage: use, PendingEventBufferSize: s.runs.undelivered()})
}

// usage is Config.Usage's report, or the shim's own memory without one.
func (s *Server) usage(ctx context.Context) ResourceUsage {
	if s.cfg.Usage != nil {
		use, err := s.cfg.Usage(ctx)
		if err == nil {
			return use
		}
		s.log.Warn("resource usage not measured", "err", err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ResourceUsage{MemoryMb: float64(ms.Sys) / (1 << 20)}
}

// readBody reads a JSON body into v: 413 past MaxBody, 422 when it is
// not JSON of v's shape. An empty body is an empty object.
func readBody(w http.ResponseWriter, r *http.Request, v any) (json.RawMessage, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		detail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", MaxBody))
		return nil, false
	case err != nil:
		detail(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return nil, false
	}
	if len(data) == 0 {
		data = []byte("{}")
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			detail(w, http.StatusUnprocessableEntity, "invalid body: "+err.Error())
			return nil, false
		}
	}
	return data, true
}

func detail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"detail": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// flush sends what the handler wrote, so a run starts after its reply.
func flush(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
}
