package mockclaude

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Exit codes Run returns besides a scenario's own.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitSIGTERM = 143 // ctx done: the caller stopped the process
)

// Run speaks the protocol on in/out until stdin EOF (then exit code 0), a
// fatal scenario step, or ctx done (143, as if SIGTERMed). It returns the
// process exit code; stderr gets human-readable diagnostics.
//
// Run never closes in or out. If it returns before in reaches EOF, one
// goroutine stays blocked reading in and discards what it reads until in
// reaches EOF or fails; it writes nothing after Run has returned.
func Run(ctx context.Context, in io.Reader, out, stderr io.Writer, cfg Config) int {
	notes := &noteWriter{w: stderr}
	if len(cfg.Problems) > 0 {
		for _, p := range cfg.Problems {
			notes.notef("%s", p)
		}
		return exitUsage
	}
	s, err := newSession(cfg, out, notes)
	if err != nil {
		notes.notef("%v", err)
		return exitUsage
	}
	if s.opts.version {
		fmt.Fprintf(out, "%s (Claude Code; tether mockclaude)\n", CLIVersion)
		return exitOK
	}
	defer s.stop()
	if s.opts.inputFormat != "stream-json" && s.opts.prompt != "" {
		// Print mode: `claude -p "prompt"`; stdin carries no protocol.
		s.markEOF()
		s.enqueue(userTurn{prompt: s.opts.prompt})
	} else {
		go s.readLoop(in)
	}
	return s.serve(ctx)
}

// userTurn is one queued `user` line.
type userTurn struct {
	prompt string
}

// session is the state of one mock process.
type session struct {
	cfg       Config
	opts      options
	scen      scenario
	cwd       string
	now       func() time.Time
	delay     time.Duration
	out       *lineWriter
	notes     *noteWriter
	ids       *idGen
	sessionID string
	mcpConfig []string // sdk servers named in --mcp-config

	wake chan struct{} // a turn was queued or stdin hit EOF
	done chan struct{} // closed when Run returns

	mu         sync.Mutex
	model      string
	permMode   string
	initReq    *initializeRequest // nil until initialize arrives
	queue      []userTurn
	eof        bool
	cancelTurn context.CancelCauseFunc
	pending    map[string]chan controlReply
	usage      map[string]*modelUsageInfo // cumulative, per model
	totalCost  float64
	msgTokens  int
	created    []string // files the mock created (for rewind_files)
}

func newSession(cfg Config, out io.Writer, notes *noteWriter) (*session, error) {
	name := cfg.Scenario
	if name == "" {
		name = "demo"
	}
	scen, ok := lookupScenario(name)
	if !ok {
		return nil, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(scenarioNames(), ", "))
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	cwd := cfg.Cwd
	if cwd == "" {
		cwd = "."
	}
	cwd, err := filepath.Abs(cwd)
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	opts := parseArgs(cfg.Args)
	s := &session{
		cfg:      cfg,
		opts:     opts,
		scen:     scen,
		cwd:      cwd,
		now:      now,
		delay:    cfg.Delay,
		out:      newLineWriter(out),
		notes:    notes,
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		model:    opts.model,
		permMode: opts.permissionMode,
		pending:  make(map[string]chan controlReply),
		usage:    make(map[string]*modelUsageInfo),
	}
	if s.model == "" {
		s.model = DefaultModel
	}
	if s.permMode == "" {
		s.permMode = "default"
	}
	seed := fmt.Sprintf("mockclaude\x00%d\x00%s\x00%s\x00%q", now().UnixNano(), cwd, name, cfg.Args)
	s.ids = &idGen{seed: sha256.Sum256([]byte(seed))}
	switch {
	case opts.resume != "":
		s.sessionID = opts.resume
	case opts.sessionID != "":
		s.sessionID = opts.sessionID
	default:
		s.sessionID = s.ids.uuid()
	}
	var problems []string
	s.mcpConfig, problems = sdkServersFromMCPConfig(opts.mcpConfigs)
	for _, p := range problems {
		notes.notef("%s", p)
	}
	return s, nil
}

// stop marks the session finished: nothing is written after this.
func (s *session) stop() {
	s.out.stopped.Store(true)
	close(s.done)
}

func (s *session) isDone() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// serve runs queued turns in order until EOF, a fatal step or ctx done.
func (s *session) serve(ctx context.Context) int {
	for {
		u, eof, ok := s.nextTurn(ctx)
		if !ok {
			return exitSIGTERM
		}
		if eof {
			if s.scen.atEOF != nil {
				return s.scen.atEOF(ctx, s)
			}
			return exitOK
		}
		if code, exit := s.runTurn(ctx, u); exit {
			return code
		}
	}
}

// nextTurn waits for a queued turn; eof is true once stdin ended and the
// queue is drained; ok is false when ctx is done.
func (s *session) nextTurn(ctx context.Context) (u userTurn, eof, ok bool) {
	for {
		if ctx.Err() != nil {
			return userTurn{}, false, false
		}
		s.mu.Lock()
		if len(s.queue) > 0 {
			u = s.queue[0]
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return u, false, true
		}
		eof = s.eof
		s.mu.Unlock()
		if eof {
			return userTurn{}, true, true
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
		}
	}
}

func (s *session) enqueue(u userTurn) {
	s.mu.Lock()
	s.queue = append(s.queue, u)
	s.mu.Unlock()
	s.poke()
}

func (s *session) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// markEOF records stdin EOF and fails every request still waiting for an
// answer, the way the real CLI reports "Stream closed".
func (s *session) markEOF() {
	s.mu.Lock()
	s.eof = true
	for id, ch := range s.pending {
		ch <- controlReply{err: errStreamClosed}
		delete(s.pending, id)
	}
	s.mu.Unlock()
	s.poke()
}

// readLoop frames stdin into lines and dispatches them. It keeps draining
// stdin after Run returns so a writer on the other side never blocks.
func (s *session) readLoop(in io.Reader) {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 && !s.isDone() {
			s.handleLine(line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !s.isDone() {
				s.notes.notef("reading stdin: %v", err)
			}
			s.markEOF()
			return
		}
	}
}

// runTurn runs one turn; exit is true when the process must end with code.
func (s *session) runTurn(ctx context.Context, u userTurn) (code int, exit bool) {
	tctx, cancel := context.WithCancelCause(ctx)
	s.mu.Lock()
	s.cancelTurn = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cancelTurn = nil
		s.mu.Unlock()
		cancel(nil)
	}()
	t := newTurn(s, ctx, tctx, u)
	err := s.emitInit()
	if err == nil {
		err = s.scen.turn(t)
	}
	var ec exitCode
	switch {
	case err == nil:
		return exitOK, false
	case errors.As(err, &ec):
		return int(ec), true
	case ctx.Err() != nil:
		return exitSIGTERM, true
	case errors.Is(err, errInterrupted):
		if err := t.interrupted(); err != nil {
			s.notes.notef("writing stdout: %v", err)
			return exitFailure, true
		}
		return exitOK, false
	default:
		s.notes.notef("turn failed: %v", err)
		return exitFailure, true
	}
}

// interrupt stops the turn in progress, if any.
func (s *session) interrupt() {
	s.mu.Lock()
	cancel := s.cancelTurn
	s.mu.Unlock()
	if cancel != nil {
		cancel(errInterrupted)
	}
}

func (s *session) emitInit() error {
	s.mu.Lock()
	model, mode := s.model, s.permMode
	agents := []string{}
	for _, a := range buildInitializeResponse(s.initReq).Agents {
		agents = append(agents, a.Name)
	}
	s.mu.Unlock()
	servers := []mcpServerRef{}
	for _, name := range s.sdkServers() {
		servers = append(servers, mcpServerRef{Name: name, Status: "connected"})
	}
	return s.out.send(systemInit{
		Type: "system", Subtype: "init", Cwd: s.cwd, SessionID: s.sessionID,
		Tools: baseTools(), MCPServers: servers, Model: model, PermissionMode: mode,
		SlashCommands: slashCommands(), APIKeySource: "none", ClaudeCodeVersion: CLIVersion,
		OutputStyle: "default", Agents: agents, Skills: []string{}, Plugins: []any{},
		AnalyticsDisabled: true, ProductFeedbackDisabled: true, UUID: s.ids.uuid(), FastModeState: "off",
	})
}

// sdkServers lists SDK MCP servers from initialize and --mcp-config.
func (s *session) sdkServers() []string {
	s.mu.Lock()
	var names []string
	if s.initReq != nil {
		names = append(names, s.initReq.SDKMCPServers...)
	}
	s.mu.Unlock()
	for _, n := range s.mcpConfig {
		dup := false
		for _, m := range names {
			dup = dup || m == n
		}
		if !dup {
			names = append(names, n)
		}
	}
	return names
}

func (s *session) currentModel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model
}

func (s *session) permissionMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.permMode
}

func (s *session) timestamp() string {
	return s.now().UTC().Format("2006-01-02T15:04:05.000Z")
}

// sleep pauses for d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
