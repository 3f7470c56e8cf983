package mast

import (
	"context"
	"errors"
	"fmt"
	segjson "github.com/segmentio/encoding/json"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

var (
	// ErrUnauthorized: the orchestrator answered the upgrade with 401.
	ErrUnauthorized = errors.New("mast: the orchestrator refused the device key (401)")
	// ErrPairing: pairing did not give a device key.
	ErrPairing = errors.New("mast: pairing failed")
	// ErrConfig: a Config the daemon cannot run with.
	ErrConfig = errors.New("mast: invalid configuration")
)

// Config configures a Daemon. Orchestrator, Service and one of DeviceKey
// and KeyFile are required.
type Config struct {
	// Orchestrator is the orchestrator's base URL, ws:// or wss://
	// (MAST_ORCHESTRATOR_URL); the daemon dials its /daemon.
	Orchestrator string
	// DeviceKey is a key given outright (flag, environment); a 401 on it
	// stops the daemon, since it cannot pair it away.
	DeviceKey string
	// KeyFile is where a paired key is kept (mode 0600); without a key
	// the daemon pairs and writes it there, and a 401 on it removes it
	// and pairs again.
	KeyFile string
	// CursorFile keeps, across restarts, the feed position the event
	// stream reached; empty keeps it in memory only.
	CursorFile string
	Service    *Service
	// Health says, per agent kind, whether it can start a session (nil)
	// or why not; it is polled every HealthInterval and status is sent
	// again when the answer changes. Nil reports every agent ready.
	Health func() map[string]error

	HealthInterval time.Duration // 0: 30 s
	Heartbeat      time.Duration // 0: 30 s, as the seed
	// SyncGrace is how long a new connection waits for sync_request
	// before streaming from where the last one stopped; 0: 2 s.
	SyncGrace    time.Duration
	PairTimeout  time.Duration // 0: 5 min, the code's lifetime
	WriteTimeout time.Duration // 0: 10 s
	// MaxFrame is the largest frame read; 0: 4 MiB.
	MaxFrame int64
	// ReplayFrames and ReplayBytes bound the window of the newest event
	// frames the daemon keeps, so a reconnect sends what the orchestrator
	// missed without reading the log (0: DefaultReplayFrames and
	// DefaultReplayBytes). ReplayFrames < 0 keeps no window and no
	// projection: every reconnect folds the whole log, as it once did.
	ReplayFrames int
	ReplayBytes  int

	// ShowPairingCode shows the user the code to confirm; nil logs it.
	ShowPairingCode func(code string)
	Hostname        string

	// Now and After are the clock; Jitter gives the backoff's random
	// fraction in [0, 1). Nil means the real ones.
	Now    func() time.Time
	After  func(time.Duration) <-chan time.Time
	Jitter func() float64
	// HTTPClient dials; nil means http.DefaultClient.
	HTTPClient *http.Client
	Logger     *slog.Logger
	// OnConnect, if set, is called each time a connection opens.
	OnConnect func()
}

// Daemon is the daemon's side of the protocol: Run keeps it connected.
type Daemon struct {
	cfg Config
	log *slog.Logger

	// proj is the projection of the feed Run keeps; nil without a
	// window (ReplayFrames < 0).
	proj *projection

	mu  sync.Mutex
	pos uint64 // the feed position the event stream reached
}

// New checks cfg and returns a Daemon.
func New(cfg Config) (*Daemon, error) {
	u, err := url.Parse(cfg.Orchestrator)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return nil, fmt.Errorf("%w: orchestrator URL %q must be ws:// or wss:// with a host", ErrConfig, cfg.Orchestrator)
	}
	if cfg.Service == nil || cfg.Service.Sessions == nil {
		return nil, fmt.Errorf("%w: no Service", ErrConfig)
	}
	if cfg.DeviceKey == "" && cfg.KeyFile == "" {
		return nil, fmt.Errorf("%w: neither a device key nor a key file", ErrConfig)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.HealthInterval, 30*time.Second)
	def(&cfg.Heartbeat, 30*time.Second)
	def(&cfg.SyncGrace, 2*time.Second)
	def(&cfg.PairTimeout, 5*time.Minute)
	def(&cfg.WriteTimeout, 10*time.Second)
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = 4 << 20
	}
	if cfg.ReplayFrames == 0 {
		cfg.ReplayFrames = DefaultReplayFrames
	}
	if cfg.ReplayBytes <= 0 {
		cfg.ReplayBytes = DefaultReplayBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.Jitter == nil {
		cfg.Jitter = mrand.Float64
	}
	if cfg.Hostname == "" {
		cfg.Hostname, _ = os.Hostname()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Service.Logger == nil {
		cfg.Service.Logger = log
	}
	d := &Daemon{cfg: cfg, log: log}
	if cfg.ReplayFrames > 0 {
		d.proj = newProjection(cfg.Service, cfg.ReplayFrames, cfg.ReplayBytes, cfg.After, log)
	}
	if pos, ok := loadCursor(cfg.CursorFile); ok && cfg.CursorFile != "" {
		d.pos = pos
	} else if d.pos, err = cfg.Service.Sessions.FeedEnd(); err != nil {
		return nil, err
	}
	return d, nil
}

// Run keeps the daemon connected until ctx ends: it pairs when it has no
// key, reconnects with the seed's jittered exponential backoff (reset by
// every connection that opens), and re-pairs when a paired key is
// refused. It returns nil when ctx ends, or the error that stops it (a
// refused key given outright).
func (d *Daemon) Run(ctx context.Context) error {
	defer d.saveCursor()
	if d.proj != nil {
		pctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); d.proj.run(pctx) }()
		defer func() { stop(); <-done }()
	}
	attempt := 0
	for {
		key, fixed, err := d.key(ctx)
		if err == nil {
			var opened bool
			opened, err = d.connect(ctx, key)
			if opened {
				attempt = 0
			}
			if errors.Is(err, ErrUnauthorized) {
				if fixed {
					return err
				}
				d.log.Warn("device key refused: pairing again", "err", err)
				if rerr := os.Remove(d.cfg.KeyFile); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
					return fmt.Errorf("mast: remove the refused key: %w", rerr)
				}
				continue
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		wait := Backoff(attempt, d.cfg.Jitter())
		attempt++
		d.log.Info("orchestrator connection lost: reconnecting", "err", err, "in", wait)
		select {
		case <-d.cfg.After(wait):
		case <-ctx.Done():
			return nil
		}
	}
}

// key is the device key: the one given, else the saved one, else a new
// one from pairing.
func (d *Daemon) key(ctx context.Context) (key string, fixed bool, err error) {
	if d.cfg.DeviceKey != "" {
		return d.cfg.DeviceKey, true, nil
	}
	if key, err = LoadKey(d.cfg.KeyFile); err != nil || key != "" {
		return key, false, err
	}
	key, err = d.pair(ctx)
	return key, false, err
}

func (d *Daemon) url(token string) string {
	return strings.TrimRight(d.cfg.Orchestrator, "/") + "/daemon?token=" + url.QueryEscape(token)
}

func (d *Daemon) dial(ctx context.Context, token string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, d.cfg.WriteTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(dctx, d.url(token), &websocket.DialOptions{HTTPClient: d.cfg.HTTPClient})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return nil, ErrUnauthorized
		}
		return nil, &redacted{err: fmt.Errorf("mast: dial the orchestrator: %w", err), secret: url.QueryEscape(token)}
	}
	conn.SetReadLimit(d.cfg.MaxFrame)
	return conn, nil
}

// redacted is an error whose text cannot show the device key: a dial
// error names the URL, and the key is in its query.
type redacted struct {
	err    error
	secret string
}

func (r *redacted) Error() string {
	if r.secret == "" {
		return r.err.Error()
	}
	return strings.ReplaceAll(r.err.Error(), r.secret, "REDACTED")
}

func (r *redacted) Unwrap() error { return r.err }

// writeJSON writes one frame, encoded as event frames are (encodeFrame).
func writeJSON(ctx context.Context, conn *websocket.Conn, v any) error {
	data, err := segjson.Marshal(v)
	if err != nil {
		return err
	}
	return conn.Write(ctx, websocket.MessageText, data)
}

func (d *Daemon) cursor() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pos
}

func (d *Daemon) setCursor(pos uint64) {
	d.mu.Lock()
	d.pos = pos
	d.mu.Unlock()
}

func (d *Daemon) saveCursor() {
	if d.cfg.CursorFile == "" {
		return
	}
	if err := saveCursor(d.cfg.CursorFile, d.cursor()); err != nil {
		d.log.Warn("event stream position not saved", "err", err)
	}
}

// status is the status frame as the agents' health is now.
func (d *Daemon) status() Status {
	s := Status{Type: "status", Agents: []AgentStatus{}}
	health := map[string]error{}
	if d.cfg.Health != nil {
		health = d.cfg.Health()
	} else {
		for kind := range d.cfg.Service.Sessions.Agents() {
			health[kind] = nil
		}
	}
	for kind, err := range health {
		a := AgentStatus{Type: agentType(kind), Ready: err == nil}
		if err != nil {
			a.Reason = err.Error()
		}
		s.AgentReady = s.AgentReady || a.Ready
		s.Agents = append(s.Agents, a)
	}
	slices.SortFunc(s.Agents, func(a, b AgentStatus) int { return strings.Compare(a.Type, b.Type) })
	return s
}
