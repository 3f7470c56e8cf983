// Package eventlog owns the durable, per-session, append-only, sequenced
// event log of the runner: the Log interface the session core writes and
// reads, and Bolt, its implementation in one bbolt file.
//
// Every session has its own sequence: the first event appended to a
// session gets seq 1, the next 2, and so on, and a seq is never reused,
// not even after retention dropped old events or after the log was closed
// and reopened. The only holes are the gaps Skip leaves, for seqs a reader
// saw before a crash lost them; Read passes over them. Every event also
// has its position in the runner-wide feed (see FeedEntry), the log's own
// numbering across sessions. The log is payload-agnostic: the core stores
// a session's canonical events in it, and replays them to a reconnecting
// client with Read from the last seq the client saw.
//
// Appends are group-committed: Append assigns the seq, makes the event
// visible to Read and returns at once; a single flusher goroutine writes
// everything appended during a short window (Options.FlushInterval) in
// one transaction, so many appenders share one fsync and a fast appender
// is not slowed to one fsync per event. Sync waits until everything
// appended so far is on disk; Close does the same before closing the
// file. Memory held by appended but uncommitted events is bounded
// (Options.MaxPendingBytes): past it Append waits for the flusher.
//
// # Storage
//
// The file is a bbolt database (go.etcd.io/bbolt): pure Go (no cgo), one
// file, ACID transactions with copy-on-write B+trees (a crash leaves the
// last committed state), ordered keys, and maintained by the etcd project,
// whose storage it is. Events live in one bucket per session, in runs of
// consecutive seqs, one value per run keyed by the run's last and first
// seq, so a cursor walks them in seq order and a commit costs bbolt one
// key per run, not per event; a large run is a bucket of its own, so that
// bbolt writes it once (the layout is described with the record type).
// The bucket's sequence holds the highest committed seq, so seqs survive
// retention emptying the bucket. Per-session metadata sits beside
// the events.
//
// bbolt trusts the file it maps, and panics (or the process dies of
// SIGBUS) on a damaged one, so Open checks every page of the file's tree
// first (package boltfile) and refuses a damaged file with a
// *DamagedError; Salvage saves what can still be read of it into a new
// log.
//
// The API is kept small (Append, Read, Sync, First/Last, Skip, Meta,
// Delete, Compact) so that it can become an interface when a later backend, for
// example a distributed one, needs to sit behind it.
package eventlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tetherhq/tether/runner/eventlog/boltfile"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxEventsPerSession = 200_000
	DefaultFlushInterval       = 2 * time.Millisecond
	DefaultMaxPendingBytes     = 64 << 20
	DefaultLockTimeout         = 2 * time.Second

	// MaxSessionLen is the longest session name accepted, in bytes.
	MaxSessionLen = 1024

	// MaxPayloadLen is the largest payload accepted, in bytes (what a
	// bbolt value holds, less the event's time).
	MaxPayloadLen = bolt.MaxValueSize - 8

	// eventOverhead is what one pending event is charged, on top of its
	// payload, against MaxPendingBytes.
	eventOverhead = 64
)

// Options configure a Log. The zero value is usable.
type Options struct {
	// MaxEventsPerSession is the retention by count: the oldest events
	// beyond it are dropped. 0 means DefaultMaxEventsPerSession, a
	// negative value means no limit.
	MaxEventsPerSession int

	// MaxFeedEvents is the feed's retention by count (see FeedEntry): 0
	// means DefaultMaxFeedEvents, a negative value means no limit.
	MaxFeedEvents int

	// MaxAge is the retention by age, applied by Compact and on Open.
	// 0 keeps events regardless of age.
	MaxAge time.Duration

	// FlushInterval is the group-commit window: appends made within it
	// are written in one transaction. 0 means DefaultFlushInterval, a
	// negative value commits as soon as the flusher is free.
	FlushInterval time.Duration

	// MaxPendingBytes bounds the memory held by appended but not yet
	// committed events (payload plus a small per-event charge); past it
	// Append waits for the flusher. 0 means DefaultMaxPendingBytes.
	MaxPendingBytes int64

	// LockTimeout is how long Open waits for a file held by another Log
	// before failing with ErrLocked. 0 means DefaultLockTimeout, a
	// negative value tries once.
	LockTimeout time.Duration

	// Now is the clock for event times and age retention (time.Now if
	// nil).
	Now func() time.Time

	// Logger receives commit failures and retention notes (discarded if
	// nil).
	Logger *slog.Logger

	// OnCommit, when set, is told of every group commit: how long it took
	// (write and fsync), how many events it wrote and whether it failed
	// (metrics). It runs on the flusher and must return quickly.
	OnCommit func(took time.Duration, events int, err error)

	// commitHook, when set (tests), runs before each group commit; an
	// error fails that commit.
	commitHook func() error

	// keepFor, when set (tests), replaces the constant of that name.
	keepFor time.Duration
}

func (o Options) withDefaults() Options {
	if o.MaxFeedEvents == 0 {
		o.MaxFeedEvents = DefaultMaxFeedEvents
	}
	if o.MaxEventsPerSession == 0 {
		o.MaxEventsPerSession = DefaultMaxEventsPerSession
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.keepFor <= 0 {
		o.keepFor = keepFor
	}
	return o
}

// Event is one entry of a session's log.
type Event struct {
	Seq     uint64
	Time    time.Time
	Payload []byte
}

// Log is the event log the session core writes and reads: every session's
// events numbered by seq, each also numbered by its position in the
// runner-wide feed. Bolt, a bbolt file, is the log of one runner; a fleet
// can give the core another.
type Log interface {
	// AppendAt logs payloads as session's next events and returns the
	// first one's seq and feed position; on success each payloads[i] is
	// the log's own copy (the caller's buffers are its own again).
	AppendAt(ctx context.Context, session string, payloads [][]byte) (first, pos uint64, err error)
	// Read yields session's events after seq `after`, up to its last when
	// called. Payloads are shared: not to be modified.
	Read(ctx context.Context, session string, after uint64) iter.Seq2[Event, error]
	// Last is session's last seq given; First its oldest retained.
	Last(session string) (uint64, error)
	First(session string) (uint64, error)
	// Skip leaves a gap up to seq `to`: seqs a client saw that a crash
	// lost.
	Skip(session string, to uint64) error
	// Feed yields every session's events after feed position `after`, up
	// to its last when called; FeedFirst and FeedLast are its bounds.
	Feed(ctx context.Context, after uint64) iter.Seq2[FeedEntry, error]
	FeedFirst() (uint64, error)
	FeedLast() (uint64, error)
	// Sessions lists the sessions it holds; Delete forgets one.
	Sessions() ([]string, error)
	Delete(session string) error
}

var _ Log = (*Bolt)(nil)

// Bolt is a durable event log holding many sessions in one bbolt file.
// Its methods are safe for concurrent use.
type Bolt struct {
	db   *bolt.DB
	opts Options
	log  *slog.Logger

	// writeMu serialises the writers of the file (flusher, SetMeta,
	// Delete, Compact) together with the in-memory state they publish
	// after their transaction (session.committed, session.diskFirst).
	writeMu sync.Mutex

	// structMu keeps Delete (writer) from removing a session while a
	// reader (Read's disk chunks) is between its checks and its
	// transaction.
	structMu sync.RWMutex

	mu           sync.Mutex
	closed       bool
	sessions     map[string]*sessionState
	dirty        []*sessionState // sessions with events not yet taken by the flusher
	pendingSince time.Time       // when dirty became non-empty (real time)
	pendingBytes int64           // charge of all uncommitted events
	appended     uint64          // events appended since Open (a ticket counter)
	durable      uint64          // every ticket <= durable is committed
	failures     uint64          // failed commits since Open
	failTicket   uint64          // ticket covered by the last failed commit
	failErr      error           // error of the last failed commit
	flushed      chan struct{}   // closed and replaced after every commit attempt
	keepers      []*sessionState // sessions with kept records
	keptBytes    int64           // their kept records' size
	// The feed (see FeedEntry): its first retained and last given
	// positions, the last committed, and the runs not yet committed, the
	// first feedTaken of which a commit is writing (readers still find
	// them here until it is done).
	feedFirst, feedLast, feedCommitted uint64
	feedPending                        []feedRun
	feedTaken                          int

	wake   chan struct{} // something to flush (capacity 1)
	urgent chan struct{} // flush now, do not wait for the window (capacity 1)
	stop   chan struct{} // closed by Close
	done   chan struct{} // closed when the flusher has exited

	closeOnce sync.Once
	closeErr  error
	finalErr  error // error of the flusher's last commit, set before done
}

// sessionState is the in-memory state of one session.
type sessionState struct {
	name string

	// Guarded by Log.mu.
	last      uint64   // highest seq assigned (or skipped)
	first     uint64   // lowest seq retained (last+1 when none)
	lastTime  int64    // time of the last event, Unix ns (times never go back)
	tail      []record // in memory, in seq order (gaps aside, consecutive): kept committed ones (see keep), then those not yet committed; elements never change
	tailBytes int64    // charge of what waits for the disk: the tail past kept, meta, gaps
	kept      int      // committed records at the head of tail, kept for readers
	keptBytes int64    // their size
	readTo    uint64   // the last seq a reader took from memory
	keepMark  uint64   // the last seq kept when the flusher last dropped old kept records
	keeper    bool     // in Log.keepers
	dirty     bool     // in Log.dirty
	gaps      []gap    // sorted; appended to in new arrays only, so readers may keep a copy
	gapsVer   uint64   // changes with gaps; gaps are on disk once committedGapsVer equals it
	meta      []byte   // metadata set by SetMetaAsync, not yet on disk (when metaVer > committedMetaVer)
	metaVer   uint64

	// Guarded by Log.writeMu, and Log.mu too for the two versions.
	committed        uint64 // highest seq on disk
	diskFirst        uint64 // lowest seq that may still be on disk
	committedGapsVer uint64
	committedMetaVer uint64
}

// Open opens the log at path, creating the file if needed, and applies
// retention (by count and by age). The directory must exist. A file held
// by another Log fails with ErrLocked after Options.LockTimeout. A file
// that is not an event log, or is damaged, fails with a *DamagedError
// (matching ErrDamaged and ErrCorrupt) naming the file and what is wrong;
// Salvage saves what can be read of it.
func Open(path string, opts Options) (*Bolt, error) {
	opts = opts.withDefaults()
	bopts := &bolt.Options{
		Timeout:        opts.LockTimeout,
		FreelistType:   bolt.FreelistMapType, // fast with the many free pages retention leaves
		NoFreelistSync: true,                 // as etcd: less to write per commit, rebuilt on Open
		// bbolt trusts the file it maps: checked first, under its lock.
		OpenFile: boltfile.OpenChecked(opts.LockTimeout, ErrCorrupt),
	}
	if runtime.GOOS != "windows" { // there it would grow the file; elsewhere it only reserves address space
		bopts.InitialMmapSize = 256 << 20 // fewer remaps, which wait for readers
	}
	db, err := openBolt(path, bopts)
	if err != nil {
		return nil, err
	}
	l := &Bolt{
		db:       db,
		opts:     opts,
		log:      opts.Logger.With("eventlog", path),
		sessions: make(map[string]*sessionState),
		flushed:  make(chan struct{}),
		wake:     make(chan struct{}, 1),
		urgent:   make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if err := l.load(); err != nil {
		_ = db.Close()
		if errors.Is(err, ErrCorrupt) && !errors.Is(err, errUnknownFormat) { // a newer tether's: not damaged
			return nil, damaged(path, err)
		}
		return nil, fmt.Errorf("eventlog: open %s: %w", path, err)
	}
	go l.run()
	return l, nil
}

// openBolt opens the file with bbolt. The file is checked first (see
// bopts.OpenFile), so bbolt should not panic; should a damage the check
// does not know make it panic on this goroutine (its open reports a
// broken tree so), that is a *DamagedError too, and what bbolt had opened
// stays so until the process, which cannot go on, exits.
func openBolt(path string, bopts *bolt.Options) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &DamagedError{Path: path, Reason: fmt.Sprintf("bbolt cannot read it (%v)", r), Err: ErrCorrupt}
		}
	}()
	db, err = bolt.Open(path, 0o600, bopts)
	var de *DamagedError
	switch {
	case errors.As(err, &de):
		return nil, de // it names the file
	case err != nil:
		return nil, boltErr("eventlog: open "+path, err)
	}
	return db, nil
}

// load reads every session's bounds and applies retention. The file's
// structure was checked; what its records hold was not, and a bad one is
// ErrCorrupt, as is a panic of bbolt.
func (l *Bolt) load() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: bbolt cannot read it (%v)", ErrCorrupt, r)
		}
	}()
	cutoff := l.ageCutoff()
	var dropped int
	err = l.db.Update(func(tx *bolt.Tx) error {
		info := tx.Bucket(bucketInfo)
		root := tx.Bucket(bucketSessions)
		if info == nil {
			if k, _ := tx.Cursor().First(); k != nil {
				return fmt.Errorf("%w: it is a bbolt file but not an event log (it has no %s bucket)", ErrCorrupt, bucketInfo)
			}
			var err error
			if info, err = tx.CreateBucket(bucketInfo); err != nil {
				return err
			}
			if err := info.Put(keyFormat, formatVersion); err != nil {
				return err
			}
		}
		switch v := info.Get(keyFormat); {
		case bytes.Equal(v, formatV1), bytes.Equal(v, formatV2):
			if err := info.Put(keyFormat, formatVersion); err != nil {
				return err
			}
		case !bytes.Equal(v, formatVersion):
			return fmt.Errorf("%w: %w %q", ErrCorrupt, errUnknownFormat, v)
		}
		if root == nil {
			var err error
			if root, err = tx.CreateBucket(bucketSessions); err != nil {
				return err
			}
		}
		var err error
		if l.feedFirst, l.feedLast, err = loadFeed(tx); err != nil {
			return fmt.Errorf("its feed: %w", err)
		}
		l.feedCommitted = l.feedLast
		return root.ForEachBucket(func(name []byte) error {
			s := &sessionState{name: string(name)}
			gaps, err := decodeGaps(root.Bucket(name).Get(keyGaps))
			if err != nil {
				return fmt.Errorf("the gaps of session %s: %w", name, err)
			}
			s.gaps = gaps
			evb := root.Bucket(name).Bucket(bucketEvents)
			if evb == nil {
				s.first, s.diskFirst = 1, 1
				l.sessions[s.name] = s
				return nil
			}
			s.last = evb.Sequence()
			s.committed = s.last
			if err := l.loadBounds(evb, s); err != nil {
				return err
			}
			s.diskFirst = s.first
			l.sessions[s.name] = s
			before := s.first
			if limit := l.opts.MaxEventsPerSession; limit > 0 && s.last-s.first+1 > uint64(limit) {
				if err := dropBefore(evb, s.last-uint64(limit)+1); err != nil {
					return err
				}
				s.first = s.last - uint64(limit) + 1
				s.diskFirst = s.first
			}
			if cutoff != nil {
				cut, err := expire(evb, s.diskFirst, *cutoff)
				if err != nil {
					return err
				}
				s.first = max(s.first, cut)
				s.diskFirst = s.first
			}
			dropped += int(s.first - before)
			return nil
		})
	})
	if err != nil {
		return boltErr("its sessions", err)
	}
	l.log.Debug("eventlog opened", "sessions", len(l.sessions), "dropped_by_retention", dropped)
	return nil
}

// loadBounds sets a session's first seq and last time from its events on
// disk. A damaged last value costs only its time (Read reports it).
func (l *Bolt) loadBounds(evb *bolt.Bucket, s *sessionState) error {
	c := evb.Cursor()
	k, _ := c.First()
	if k == nil {
		s.first = s.last + 1
		return nil
	}
	first, _, err := keyRange(k)
	if err != nil {
		return err
	}
	s.first = first
	k, v := c.Last()
	if s.lastTime, err = lastStoredTime(evb, k, v); err != nil {
		l.log.Warn("eventlog: last value of a session is damaged", "session", s.name, "err", err)
	}
	return nil
}

// Append appends payload to session and returns its seq. It returns once
// the event has its seq and is visible to Read; it is on disk within
// FlushInterval, or after Sync or Close. Append copies payload. When
// more than MaxPendingBytes wait for the disk, Append waits too, until
// ctx is done.
func (l *Bolt) Append(ctx context.Context, session string, payload []byte) (seq uint64, err error) {
	one := [1][]byte{payload}
	seq, _, err = l.appendEvents(ctx, session, one[:], false)
	return seq, err
}

// AppendBatch appends payloads to session with consecutive seqs and
// returns the first one (0 when payloads is empty). It behaves like that
// many Appends, made atomically.
func (l *Bolt) AppendBatch(ctx context.Context, session string, payloads [][]byte) (first uint64, err error) {
	first, _, err = l.appendEvents(ctx, session, payloads, false)
	return first, err
}

// AppendAt is AppendBatch that also returns the first event's position
// in the feed; the others follow it. On success each payloads[i] is
// replaced by the log's own copy of it (shared, as Read's payloads), so
// the caller may encode into a buffer it reuses and keep what the log
// holds.
func (l *Bolt) AppendAt(ctx context.Context, session string, payloads [][]byte) (first, pos uint64, err error) {
	return l.appendEvents(ctx, session, payloads, true)
}

// appendEvents appends payloads; share: replace each with the log's copy.
func (l *Bolt) appendEvents(ctx context.Context, name string, payloads [][]byte, share bool) (uint64, uint64, error) {
	if err := checkName(name); err != nil {
		return 0, 0, err
	}
	if len(payloads) == 0 {
		return 0, 0, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("eventlog: append to %q: %w", name, err)
	}
	// Copy outside the lock.
	var one [1]record
	recs := one[:0]
	if len(payloads) > 1 {
		recs = make([]record, 0, len(payloads))
	}
	size := 0
	for _, p := range payloads {
		if len(p) > MaxPayloadLen {
			return 0, 0, fmt.Errorf("eventlog: append to %q: %w: %d bytes", name, ErrTooLarge, len(p))
		}
		size += recordHeader + len(p)
	}
	recs = newRecords(recs, payloads, size)
	charge := int64(size) + int64(len(recs))*eventOverhead

	l.mu.Lock()
	for {
		if l.closed {
			l.mu.Unlock()
			return 0, 0, fmt.Errorf("eventlog: append to %q: %w", name, ErrClosed)
		}
		// A lone event larger than the budget is let through when
		// nothing else is pending, or it would never be.
		if l.pendingBytes == 0 || l.pendingBytes+charge <= l.opts.MaxPendingBytes {
			break
		}
		flushed := l.flushed
		signal(l.urgent)
		l.mu.Unlock()
		select {
		case <-flushed:
		case <-l.stop:
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("eventlog: append to %q: waiting for the disk: %w", name, ctx.Err())
		}
		l.mu.Lock()
	}

	s := l.sessions[name]
	if s == nil {
		s = &sessionState{name: name, first: 1, diskFirst: 1}
		l.sessions[name] = s
	}
	now := l.opts.Now().UnixNano()
	if now < s.lastTime {
		now = s.lastTime
	}
	s.lastTime = now
	first := s.last + 1
	for i, r := range recs {
		r.stamp(first+uint64(i), now)
	}
	s.tail = append(s.tail, recs...)
	s.last += uint64(len(recs))
	if limit := l.opts.MaxEventsPerSession; limit > 0 && s.last-s.first+1 > uint64(limit) {
		s.first = s.last - uint64(limit) + 1
	}
	pos := l.notePositions(s, first, uint64(len(recs)))
	l.pend(s, uint64(len(recs)), charge)
	if l.pendingBytes >= l.opts.MaxPendingBytes/8 {
		signal(l.urgent) // enough for a big transaction: do not wait for the window
	}
	l.mu.Unlock()
	if share {
		for i, r := range recs {
			if payloads[i] = r.payload(); len(payloads[i]) == 0 {
				payloads[i] = nil
			}
		}
	}
	return first, pos, nil
}

// Last returns the highest seq assigned in session (0 if none), whether
// or not it is committed yet.
func (l *Bolt) Last(session string) (uint64, error) {
	s, err := l.lookup(session)
	if err != nil || s == nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return s.last, nil
}

// First returns the lowest seq still retained in session. The retained
// events are [First, Last]; the range is empty when First > Last (1 for a
// session without events). A reader positioned before First-1 has lost
// events: Read returns ErrTruncated.
func (l *Bolt) First(session string) (uint64, error) {
	s, err := l.lookup(session)
	if err != nil {
		return 0, err
	}
	if s == nil {
		return 1, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return s.first, nil
}

// lookup returns the session's state, nil if it does not exist.
func (l *Bolt) lookup(name string) (*sessionState, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	return l.sessions[name], nil
}

// Sessions returns the names of all sessions, sorted.
func (l *Bolt) Sessions() ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	names := make([]string, 0, len(l.sessions))
	for name := range l.sessions {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// Close commits pending appends, stops the flusher and closes the file.
// It is idempotent: later calls return what the first one returned.
// Appends waiting for the disk fail with ErrClosed.
func (l *Bolt) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		close(l.stop)
		<-l.done
		var errs []error
		if l.finalErr != nil {
			errs = append(errs, fmt.Errorf("eventlog: close: last commit failed, appended events were lost: %w", l.finalErr))
		}
		if err := l.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("eventlog: close: %w", err))
		}
		if len(errs) > 0 {
			l.closeErr = errs[0]
			if len(errs) > 1 {
				l.closeErr = fmt.Errorf("%w; %w", errs[0], errs[1])
			}
		}
	})
	return l.closeErr
}

func checkName(name string) error {
	if name == "" || len(name) > MaxSessionLen {
		return fmt.Errorf("%w: %d bytes (want 1..%d)", ErrInvalidSession, len(name), MaxSessionLen)
	}
	return nil
}

// signal makes a non-blocking send on a channel of capacity 1.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// clone copies b; empty payloads are nil, whatever path they come from.
func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}
