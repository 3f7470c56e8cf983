package mast

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tetherhq/tether/runner/sessions"
)

// The replay window's default bounds. A mast frame is a few hundred bytes
// (a part.updated of a streamed text carries the text so far, so a long
// reply's frames are kilobytes): 16,384 frames are minutes of a busy
// turn, and more than the core keeps of the feed in memory (4,096 to
// 8,192 events), so a reconnect after a network blip or an orchestrator's
// restart is served from memory; 16 MiB caps what long texts make of it.
const (
	DefaultReplayFrames = 16_384
	DefaultReplayBytes  = 16 << 20
)

// projection is the daemon's projection of the runner-wide feed, kept as
// events are logged by one goroutine (run): each session's projector (what
// sync_response answers) and a bounded window of the newest event frames,
// encoded, with their positions and stamps. A reconnect whose orchestrator
// names a timestamp inside the window is answered from it: the frames
// after that timestamp, and a sync from the kept state, without reading
// the log. One older than the window falls back to folding the log, as
// every reconnect did before; so does a connection that falls behind the
// window. Stamps are the fold's, and every fold of the same feed makes
// the same frames with the same stamps, so a connection moves between the
// window and a fold of its own without losing or repeating a frame.
type projection struct {
	svc       *Service
	maxFrames int
	maxBytes  int
	log       *slog.Logger
	after     func(time.Duration) <-chan time.Time

	mu sync.Mutex
	st *feedState
	// gen counts the fold's beginnings: a fold that starts over (the
	// log's retention dropped events ahead of it) makes a new window.
	gen uint64
	// ready: the fold runs; else every reader folds the log itself.
	ready bool
	// folded is the last feed position whose frames are all in frames.
	folded uint64
	// frames[head:] is the window; frames[head] is frame number base.
	frames []frame
	head   int
	base   uint64
	bytes  int
	// Every frame of a position after coverPos, and every frame stamped
	// after coverStamp, is in the window.
	coverPos   uint64
	coverStamp int64
	// retiredQ and endedQ are, in stamp order, the messages retired and
	// the sessions ended: each is forgotten once the window no longer
	// reaches back to it.
	retiredQ []retiredMessage
	endedQ   []endedSession
	woken    chan struct{} // closed and replaced when frames are added
}

type frame struct {
	pos   uint64
	stamp int64
	data  []byte
}

type retiredMessage struct {
	session string
	m       *message
	at      int64
}

type endedSession struct {
	session string
	at      int64
}

func newProjection(svc *Service, maxFrames, maxBytes int, after func(time.Duration) <-chan time.Time, log *slog.Logger) *projection {
	return &projection{svc: svc, maxFrames: maxFrames, maxBytes: maxBytes, after: after, log: log, woken: make(chan struct{})}
}

// run keeps the projection until ctx ends. A fold that fails (the log
// cannot be read) leaves the readers to fold the log themselves, and is
// tried again a second later.
func (p *projection) run(ctx context.Context) {
	for {
		err := p.svc.fold(ctx, p.begin, p.apply)
		p.mu.Lock()
		p.ready = false
		p.wake()
		p.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		p.log.Warn("the daemon's projection of the feed failed: reconnects fold the log until it is back", "err", err)
		select {
		case <-p.after(time.Second):
		case <-ctx.Done():
			return
		}
	}
}

// begin starts the projection anew after feed position oldest.
func (p *projection) begin(oldest uint64) {
	st := newFeedState()
	st.retired = func(id string, m *message, at int64) {
		p.retiredQ = append(p.retiredQ, retiredMessage{session: id, m: m, at: at})
	}
	st.ended = func(id string, at int64) { p.endedQ = append(p.endedQ, endedSession{session: id, at: at}) }
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.frames)
	p.st, p.gen, p.ready, p.folded = st, p.gen+1, true, oldest
	p.frames, p.head, p.base, p.bytes = p.frames[:0], 0, 0, 0
	p.coverPos, p.coverStamp = oldest, noStamp
	p.retiredQ, p.endedQ = nil, nil
	p.wake()
}

// apply folds one feed event in and adds its frames to the window.
func (p *projection) apply(fe sessions.FeedEvent) error {
	p.mu.Lock()
	events, stamps := p.st.apply(fe)
	p.mu.Unlock()
	add := make([]frame, 0, len(events))
	for i, e := range events {
		data, err := encodeFrame(e, stamps[i])
		if err != nil {
			p.log.Error("mast event not encodable: not sent", "type", e.Type, "session", e.SessionID, "err", err)
			continue
		}
		add = append(add, frame{pos: fe.Pos, stamp: stamps[i], data: data})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range add {
		p.frames = append(p.frames, f)
		p.bytes += len(f.data)
	}
	p.folded = fe.Pos
	p.bound()
	p.wake()
	return nil
}

// bound drops the oldest frames past the window's bounds, and forgets
// what no reader served from the window can ask for any more.
func (p *projection) bound() {
	dropped := false
	for n := len(p.frames) - p.head; n > 0 && (n > p.maxFrames || p.bytes > p.maxBytes); n-- {
		f := p.frames[p.head]
		p.coverPos, p.coverStamp = f.pos, f.stamp
		p.bytes -= len(f.data)
		p.frames[p.head] = frame{}
		p.head++
		p.base++
		dropped = true
	}
	if !dropped {
		return
	}
	if p.head > len(p.frames)/2 { // compact, so the array does not grow without end
		n := copy(p.frames, p.frames[p.head:])
		clear(p.frames[n:])
		p.frames, p.head = p.frames[:n], 0
	}
	p.forget()
}

// forget drops the retired messages and the ended sessions the window no
// longer reaches back to: a sync answered from the projection names a
// timestamp at or after coverStamp, and they changed before it.
func (p *projection) forget() {
	n := 0
	for ; n < len(p.retiredQ) && p.retiredQ[n].at <= p.coverStamp; n++ {
		r := p.retiredQ[n]
		if pr := p.st.projectors[r.session]; pr != nil {
			if i := indexOf(pr.done, r.m); i >= 0 {
				pr.done = append(pr.done[:i], pr.done[i+1:]...)
			}
		}
	}
	clear(p.retiredQ[:n])
	p.retiredQ = p.retiredQ[n:]
	n = 0
	for ; n < len(p.endedQ) && p.endedQ[n].at <= p.coverStamp; n++ {
		id := p.endedQ[n].session
		if pr := p.st.projectors[id]; pr != nil && pr.ended && len(pr.done) == 0 && len(pr.messages) == 0 {
			delete(p.st.projectors, id)
			delete(p.st.lastStamp, id)
		}
	}
	clear(p.endedQ[:n])
	p.endedQ = p.endedQ[n:]
}

func indexOf(list []*message, m *message) int {
	for i, x := range list {
		if x == m {
			return i
		}
	}
	return -1
}

// wake tells the readers that something changed (under mu).
func (p *projection) wake() {
	close(p.woken)
	p.woken = make(chan struct{})
}

// covered says whether every frame a reader needs (after position from,
// stamped after since) is in the window: those in it and those to come.
func (p *projection) covered(from uint64, since int64) bool {
	return p.ready && (from >= p.coverPos || since >= p.coverStamp)
}

// sync answers sync_request from the kept state, once the projection has
// folded the feed up to its end as the request found it. ok is false
// when the orchestrator's timestamp is older than the window (or the
// projection is not running): then the caller folds the log.
func (p *projection) sync(ctx context.Context, req Command) (resp SyncResponse, since int64, ok bool, err error) {
	if since, err = syncSince(req); err != nil {
		return SyncResponse{}, 0, false, err
	}
	end, err := p.svc.Sessions.FeedEnd()
	if err != nil {
		return SyncResponse{}, 0, false, err
	}
	var unknown []string
	for {
		p.mu.Lock()
		if !p.ready || !p.covered(0, since) {
			p.mu.Unlock()
			return SyncResponse{}, since, false, nil
		}
		if p.folded >= end {
			resp, unknown = p.st.response(req.CachedSessionIDs, since)
			p.mu.Unlock()
			break
		}
		woken := p.woken
		p.mu.Unlock()
		select {
		case <-woken:
		case <-ctx.Done():
			return SyncResponse{}, 0, false, ctx.Err()
		}
	}
	// A session the projection forgot ended before the window: nothing
	// of it changed after since.
	for _, id := range unknown {
		if _, err := p.svc.Sessions.Get(id); err == nil {
			resp.Sessions = append(resp.Sessions, SyncSession{ID: id, Messages: []Message{}})
		}
	}
	slices.SortFunc(resp.Sessions, func(a, b SyncSession) int { return strings.Compare(a.ID, b.ID) })
	return resp, since, true, nil
}

// follow sends every event frame after position from stamped after
// since, then live, until ctx ends or send fails: from the window while
// it reaches back far enough, else from a fold of the log until the
// window has the rest. sent is told each position once its frames are
// written.
func (p *projection) follow(ctx context.Context, from uint64, since int64, send func([]byte) error, sent func(uint64)) error {
	for {
		next, gen, ok := p.position(from, since)
		if !ok {
			last, err := p.svc.stream(ctx, from, since, send, sent, func(pos uint64) bool {
				p.mu.Lock()
				defer p.mu.Unlock()
				return p.covered(max(pos, from), since)
			})
			if !errors.Is(err, errCaughtUp) {
				return err
			}
			from = last
			continue
		}
		var err error
		if from, err = p.tail(ctx, gen, next, from, since, send, sent); err != nil {
			return err
		}
	}
}

// position is the number of the first frame in the window after from and
// since, and the window's generation; ok is false when the window does
// not reach back that far.
func (p *projection) position(from uint64, since int64) (next, gen uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.covered(from, since) {
		return 0, 0, false
	}
	window := p.frames[p.head:]
	i := sort.Search(len(window), func(i int) bool { return window[i].pos > from && window[i].stamp > since })
	return p.base + uint64(i), p.gen, true
}

// tail sends the window's frames from frame number next on that are
// after from and since, then each new one, until the window moves past
// the reader (it fell behind, or the fold started over): then it returns
// the position reached, with no error, for the caller to find the rest.
// (A fold still catching up adds frames of positions the reader has.)
func (p *projection) tail(ctx context.Context, gen, next, from uint64, since int64, send func([]byte) error, sent func(uint64)) (uint64, error) {
	var batch []frame
	for {
		p.mu.Lock()
		if p.gen != gen || !p.ready || next < p.base {
			p.mu.Unlock()
			return from, nil
		}
		// Copied: the fold reuses the window's array.
		batch = append(batch[:0], p.frames[p.head+int(next-p.base):]...)
		folded, woken := p.folded, p.woken
		p.mu.Unlock()
		for _, f := range batch {
			if f.pos <= from || f.stamp <= since {
				continue
			}
			if err := send(f.data); err != nil {
				return from, err
			}
		}
		next += uint64(len(batch))
		clear(batch)
		if folded > from { // every frame of the positions up to folded is written
			from = folded
			sent(folded)
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return from, ctx.Err()
		}
	}
}
