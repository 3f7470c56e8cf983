package mast

import (
	"context"
	"reflect"
	"sync"

	"github.com/coder/websocket"
)

// maxCommands is how many commands of one connection run at once; the
// next waits (and the connection's reading with it) for one to finish.
const maxCommands = 64

// link is one open connection.
type link struct {
	d        *Daemon
	conn     *websocket.Conn
	wg       sync.WaitGroup
	commands chan struct{}
}

func (l *link) write(ctx context.Context, v any) error {
	ctx, cancel := context.WithTimeout(ctx, l.d.cfg.WriteTimeout)
	defer cancel()
	return writeJSON(ctx, l.conn, v)
}

// writeRaw writes one frame already encoded.
func (l *link) writeRaw(ctx context.Context, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, l.d.cfg.WriteTimeout)
	defer cancel()
	return l.conn.Write(ctx, websocket.MessageText, data)
}

// spawn runs f in a goroutine the connection waits for before it ends.
func (l *link) spawn(f func()) {
	l.wg.Add(1)
	go func() { defer l.wg.Done(); f() }()
}

// connect serves one connection until it drops or ctx ends; opened says
// whether it opened.
func (d *Daemon) connect(ctx context.Context, key string) (opened bool, err error) {
	conn, err := d.dial(ctx, key)
	if err != nil {
		return false, err
	}
	defer conn.CloseNow()
	if d.cfg.OnConnect != nil {
		d.cfg.OnConnect()
	}
	d.log.Info("connected to the orchestrator")
	ctx, cancel := context.WithCancel(ctx)
	l := &link{d: d, conn: conn, commands: make(chan struct{}, maxCommands)}
	defer func() { cancel(); l.wg.Wait(); d.saveCursor() }()
	first := d.status()
	if err := l.write(ctx, first); err != nil {
		return true, err
	}
	syncs := make(chan Command, 8)
	l.spawn(func() { l.heartbeat(ctx) })
	l.spawn(func() { l.watchHealth(ctx, first) })
	l.spawn(func() { l.stream(ctx, cancel, syncs) })
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return true, err
		}
		if typ != websocket.MessageText {
			d.log.Warn("binary frame from the orchestrator ignored")
			continue
		}
		l.dispatch(ctx, data, syncs)
	}
}

// dispatch handles one frame: commands run concurrently, each answered by
// one command_result; a frame that cannot be read is answered where it
// has a requestId, and never ends the connection.
func (l *link) dispatch(ctx context.Context, data []byte, syncs chan<- Command) {
	c, err := ParseCommand(data)
	switch {
	case err != nil:
		if c.RequestID != "" {
			l.spawn(func() { l.answer(ctx, errResult(c.RequestID, err)) })
			return
		}
		l.d.log.Warn("unreadable frame from the orchestrator ignored", "err", err)
	case c.Type == frameSyncRequest:
		select {
		case syncs <- c:
		default:
			l.d.log.Warn("sync_request dropped: too many waiting")
		}
	case c.Type == frameHeartbeatAck, c.Type == framePairResponse:
	case c.RequestID == "":
		l.d.log.Warn("frame without a requestId ignored", "type", c.Type)
	default:
		select {
		case l.commands <- struct{}{}:
		case <-ctx.Done():
			return
		}
		l.spawn(func() {
			defer func() { <-l.commands }()
			l.answer(ctx, l.d.cfg.Service.Handle(ctx, c))
		})
	}
}

func (l *link) answer(ctx context.Context, r Result) {
	if err := l.write(ctx, r); err != nil {
		l.d.log.Warn("command_result not sent", "requestId", r.RequestID, "err", err)
	}
}

func (l *link) heartbeat(ctx context.Context) {
	for {
		select {
		case <-l.d.cfg.After(l.d.cfg.Heartbeat):
			if err := l.write(ctx, Heartbeat{Type: "heartbeat", Timestamp: Timestamp(l.d.cfg.Now())}); err != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// watchHealth sends status again whenever an agent's readiness changes.
// last is the status sent last: a change between it and the watch's
// first look is a change too.
func (l *link) watchHealth(ctx context.Context, last Status) {
	for {
		select {
		case <-l.d.cfg.After(l.d.cfg.HealthInterval):
			s := l.d.status()
			if reflect.DeepEqual(s, last) {
				continue
			}
			if err := l.write(ctx, s); err != nil {
				return
			}
			last = s
		case <-ctx.Done():
			return
		}
	}
}

// stream sends the events: after the first sync_request from where the
// orchestrator's timestamp says it stopped (having answered it), or, if
// none comes within SyncGrace, from where this daemon's last connection
// stopped. Later sync_requests are answered alone.
func (l *link) stream(ctx context.Context, drop context.CancelFunc, syncs <-chan Command) {
	from, since := l.d.cursor(), int64(0)
	select {
	case c := <-syncs:
		if stamp, ok := l.answerSync(ctx, c); ok {
			from, since = 0, stamp
		}
	case <-l.d.cfg.After(l.d.cfg.SyncGrace):
	case <-ctx.Done():
		return
	}
	l.spawn(func() {
		for {
			select {
			case c := <-syncs:
				l.answerSync(ctx, c)
			case <-ctx.Done():
				return
			}
		}
	})
	err := l.d.events(ctx, from, since, func(data []byte) error { return l.writeRaw(ctx, data) }, l.d.setCursor)
	if err != nil && ctx.Err() == nil {
		l.d.log.Warn("event stream failed: reconnecting", "err", err)
		drop()
	}
}

func (l *link) answerSync(ctx context.Context, c Command) (int64, bool) {
	resp, since, err := l.d.sync(ctx, c)
	if err != nil {
		l.d.log.Warn("sync_request not answered", "err", err)
		return 0, false
	}
	if err := l.write(ctx, resp); err != nil {
		return 0, false
	}
	return since, true
}

// sync answers sync_request: from the projection when the orchestrator's
// timestamp is inside its window, else by folding the log.
func (d *Daemon) sync(ctx context.Context, c Command) (SyncResponse, int64, error) {
	if d.proj != nil {
		resp, since, ok, err := d.proj.sync(ctx, c)
		if err != nil || ok {
			return resp, since, err
		}
	}
	return d.cfg.Service.sync(ctx, c)
}

// events sends the event frames after position from stamped after since,
// then live (see projection.follow), until ctx ends or send fails.
func (d *Daemon) events(ctx context.Context, from uint64, since int64, send func([]byte) error, sent func(uint64)) error {
	if d.proj != nil {
		return d.proj.follow(ctx, from, since, send, sent)
	}
	_, err := d.cfg.Service.stream(ctx, from, since, send, sent, nil)
	return err
}
