package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults for Config fields left zero.
const (
	DefaultHeartbeat = time.Second
	// DefaultLostAfter is how long a runner may miss its heartbeats
	// before the fleet ends its sessions (runner_lost).
	DefaultLostAfter = 3 * time.Second
	// DefaultMaxEventsPerSession is the stream's retention per session,
	// as the runner's own log's.
	DefaultMaxEventsPerSession = 200_000
	// dedupWindow is how long the stream remembers a message id: a
	// publish retried within it is not written twice.
	dedupWindow = 2 * time.Minute
	// ackTimeout is how long a publish waits for the stream's ack.
	ackTimeout = 5 * time.Second
)

// Config joins a runner to a fleet. URLs or NodeConfig is required.
type Config struct {
	// Name names the runner in the fleet; empty: host and port of Addr.
	Name string
	// Addr is where hosts reach this runner (listed in GET /v1/runners).
	Addr string
	// URLs of an existing NATS system with JetStream.
	URLs []string
	// CredsFile is a standard NATS credentials file.
	CredsFile string
	// NodeConfig is a nats-server configuration file: the runner runs
	// that NATS node in its own process and connects to it.
	NodeConfig string
	// Replicas of the stream and buckets; 0: the embedded node's peers
	// (at most 3), or 3 on an existing cluster, 1 on a lone server.
	Replicas int
	// MaxSessions is the runner's room (0: no bound), for placement.
	MaxSessions int
	// Heartbeat and LostAfter: see DefaultHeartbeat, DefaultLostAfter.
	Heartbeat, LostAfter time.Duration
	// ConnectTimeout bounds the start: the connection, JetStream's
	// quorum, the stream and buckets (DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// ResumeOptions, when set, are the start options that continue an
	// agent's conversation of `turns` turns in another process (the
	// mock's); a session taken over from a lost runner starts with them.
	ResumeOptions func(agent string, turns int) json.RawMessage
	Logger        *slog.Logger
}

// Fleet is one runner's membership of a fleet: its NATS connection (and
// node, when embedded), the stream and buckets. Core serves sessions
// through it once the runner's own session core is up.
type Fleet struct {
	cfg  Config
	log  *slog.Logger
	node *Node
	nc   *nats.Conn
	js   jetstream.JetStream

	events    jetstream.Stream
	sessions  jetstream.KeyValue
	runners   jetstream.KeyValue
	approvals jetstream.KeyValue

	pub *publisher
	out *outbox

	closeOnce sync.Once
}

// Open joins the fleet: it starts the embedded node when configured,
// connects, waits for JetStream, and makes sure the stream and buckets
// exist. Its errors say which part failed (ErrUnreachable, ErrRefused,
// ErrNoJetStream, ErrNodeConfig).
func Open(ctx context.Context, cfg Config) (_ *Fleet, err error) {
	if len(cfg.URLs) == 0 && cfg.NodeConfig == "" {
		return nil, errors.New("fleet: neither NATS URLs nor an embedded node's configuration given")
	}
	cfg = withDefaults(cfg)
	f := &Fleet{cfg: cfg, log: cfg.Logger, out: newOutbox()}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if cfg.NodeConfig != "" {
		if f.node, err = StartNode(cfg.NodeConfig, cfg.Logger); err != nil {
			return nil, err
		}
	}
	if f.nc, err = dial(cfg, f.node); err != nil {
		return nil, err
	}
	if f.js, err = jetstream.New(f.nc, jetstream.WithPublishAsyncMaxPending(4096),
		// An ack a dying node took with it must fail, not wait forever.
		jetstream.WithPublishAsyncTimeout(ackTimeout)); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	if err = awaitJetStream(ctx, f.js); err != nil {
		return nil, err
	}
	if err = f.provision(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Name == "" {
		cfg.Name = defaultName(cfg.Addr)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.LostAfter <= 0 {
		cfg.LostAfter = DefaultLostAfter
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	return cfg
}

// defaultName is the host's name and the runner's port.
func defaultName(addr string) string {
	host, _ := os.Hostname()
	if _, port, err := net.SplitHostPort(addr); err == nil {
		return strings.Trim(host+"-"+port, "-")
	}
	return host
}

// Name is the runner's name in the fleet.
func (f *Fleet) Name() string { return f.cfg.Name }

func (f *Fleet) replicas() int {
	switch {
	case f.cfg.Replicas > 0:
		return f.cfg.Replicas
	case f.node != nil:
		return min(3, f.node.Peers())
	case f.nc.ConnectedClusterName() != "":
		return 3
	}
	return 1
}

// provision creates or updates the stream and buckets, retrying while a
// starting cluster cannot place their replicas yet. They are made at
// once: each new replicated group elects its own leader (seconds) before
// it answers, and the elections overlap.
func (f *Fleet) provision(ctx context.Context) error {
	r := f.replicas()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, make := range []func(context.Context) error{
		func(ctx context.Context) (err error) {
			f.events, err = f.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: eventStream,
				Description: "every session's canonical events, a subject per session",
				Subjects:    []string{eventSubjects}, Storage: jetstream.FileStorage, Replicas: r,
				Duplicates: dedupWindow, MaxMsgsPerSubject: DefaultMaxEventsPerSession, AllowDirect: true,
				Discard: jetstream.DiscardOld, RePublish: &jetstream.RePublish{Source: eventSubjects, Destination: liveSubjects}})
			return err
		},
		f.bucket(&f.sessions, sessionsBucket, "every session: its runner, agent, workspace and state", 0, r),
		f.bucket(&f.runners, runnersBucket, "the runners, refreshed by their heartbeats", 10*f.cfg.LostAfter, r),
		f.bucket(&f.approvals, approvalsBucket, "every session's approvals, pending and resolved", 0, r),
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.retry(ctx, make)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fleet: creating the stream and buckets (%d replicas): %w", r, err)
	}
	return nil
}

func (f *Fleet) bucket(kv *jetstream.KeyValue, name, what string, ttl time.Duration, replicas int) func(context.Context) error {
	return func(ctx context.Context) (err error) {
		*kv, err = f.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, Description: what,
			Replicas: replicas, TTL: ttl, Storage: jetstream.FileStorage})
		return err
	}
}

// retry runs one step of the set-up until it succeeds or ctx ends. A
// cluster that has just elected its metadata leader may drop the first
// requests, so the first attempts are short; later ones are long enough
// for a new group's election.
func (f *Fleet) retry(ctx context.Context, step func(context.Context) error) error {
	start, told := time.Now(), time.Now()
	for attempt := 2 * time.Second; ; attempt = min(2*attempt, 10*time.Second) {
		actx, cancel := context.WithTimeout(ctx, attempt)
		err := step(actx)
		cancel()
		if err == nil {
			return nil
		}
		f.log.Debug("fleet: the stream and buckets are not ready yet", "err", err)
		if time.Since(told) > 10*time.Second {
			told = time.Now()
			f.log.Info("fleet: waiting for the NATS cluster to place the stream and buckets", "waited", time.Since(start).Round(time.Second), "err", err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Close leaves the fleet: it drains the connection (what the publisher
// sent is flushed) and stops the embedded node.
func (f *Fleet) Close() {
	f.closeOnce.Do(func() {
		if f.nc != nil {
			f.nc.Close()
		}
		if f.node != nil {
			f.node.Close()
		}
	})
}
