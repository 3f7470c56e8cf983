package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"
)

// DefaultMaxRuns is how many runs the shim keeps streams of (the newest):
// a run is a few hundred bytes (its events are the log's), so this bounds
// what a shim that is spawned again and again keeps, not a buffer.
const DefaultMaxRuns = 1000

// ErrRecords: the runs' records (Config.StateFile) cannot be read.
var ErrRecords = errors.New("shim: the runs' records cannot be read")

// ErrGone: a client asked to resume from a run the shim no longer keeps
// or never had, or whose events the log no longer has.
var ErrGone = errors.New("shim: no such event to resume from")

// endOfRun anchors a mark after the run's last canonical event.
const endOfRun = math.MaxUint64

// runRecord is what the shim decides of a run and keeps: everything of
// its stream the session's log does not say. The stream is the log's
// events, mapped, with these events of the shim's own put in.
type runRecord struct {
	ID         string    `json:"id"`
	SessionID  string    `json:"sessionId"`
	AgentID    string    `json:"agentId"`
	Workstream string    `json:"workstream"`
	Started    time.Time `json:"started"`
	Marks      []mark    `json:"marks,omitempty"`
	// URIs are the backend's uris of the artifacts uploaded, by id.
	URIs map[string]string `json:"uris,omitempty"`
	// Cut, when set, is the run's last canonical seq (-1: none): the
	// shim ended the run there (a panic while it ran it, or a later run
	// began while its agent had not stopped), whatever the log has after.
	Cut *int64 `json:"cut,omitempty"`
}

// mark is events of the shim's own in a run's stream: after the AgentEvents
// of canonical event After (0: before any; endOfRun: after the last), or,
// with Replace, in their place. Marks are added in the order of After.
type mark struct {
	After   uint64    `json:"after"`
	Replace bool      `json:"replace,omitempty"`
	At      time.Time `json:"at"`
	Events  []Event   `json:"events"`
}

// runEntry is one run the shim keeps.
type runEntry struct {
	rec runRecord
	// shown is how many of rec.Marks readers may see (a mark is shown
	// once it is saved).
	shown int
	// decided is the last canonical seq whose events the run's pump has
	// decided (-1: not even the run's start); a reader maps an event
	// only then, so every reader makes the same stream. A run of an
	// earlier process is decided to the end.
	decided int64
	// count is how many events the run's stream has so far (-1: not
	// counted yet, for a run of an earlier process).
	count int64
	// sealed: a later run began (or the run is of an earlier process),
	// so no mark is added any more.
	sealed bool
	// final: the run's pump has ended, so nothing more is decided.
	final bool
	// ending is closed once the run's last canonical seq is known: it is
	// cut, or its pump has ended (see end).
	ending chan struct{}
	// checkpoints are where a reader resuming mid-run starts, one every
	// checkpointEvery canonical events: so a resume reads the log from
	// the last one before its sequence, not from the run's start.
	checkpoints []checkpoint
}

// checkpointEvery is how many canonical events apart a run's checkpoints
// are: a resume reads at most that many it does not send.
const checkpointEvery = 1024

// checkpoint is the run's stream as decided up to canonical event seq.
type checkpoint struct {
	seq    int64       // the last canonical event folded
	count  int64       // the stream's events up to it and its marks
	marks  int         // the run's marks put in by then
	mapper mapperState // the mapper after it
}

// runs is every run the shim keeps, oldest first, and where delivery to
// the clients stands. Runs are numbered from 0 in the process's order;
// list[0] is number base.
type runs struct {
	file string // where the records are saved ("": nowhere)
	max  int

	saving sync.Mutex // orders saves

	mu   sync.Mutex
	list []*runEntry
	base int64
	// delivered is the newest event written to any client: run number
	// and sequence.
	deliveredRun int64
	deliveredSeq int64
	woken        chan struct{} // closed and replaced on every change
}

// cursor names a place in the stream: after event seq of run number run.
type cursor struct {
	run int64
	seq int64
}

// openRuns reads the runs an earlier process saved in file (none if
// there is no file): their streams are served from the log, and new runs
// come after them.
func openRuns(file string, max int) (*runs, error) {
	if max <= 0 {
		max = DefaultMaxRuns
	}
	rs := &runs{file: file, max: max, woken: make(chan struct{})}
	if file == "" {
		return rs, nil
	}
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return rs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecords, err)
	}
	var saved []runRecord
	if err := json.Unmarshal(data, &saved); err != nil {
		return nil, fmt.Errorf("%w: %s is not the shim's (remove it to start without the earlier runs' streams): %w", ErrRecords, file, err)
	}
	for _, rec := range saved {
		ended := make(chan struct{})
		close(ended)
		rs.list = append(rs.list, &runEntry{rec: rec, shown: len(rec.Marks), decided: math.MaxInt64, count: -1,
			sealed: true, final: true, ending: ended})
	}
	rs.deliveredRun = int64(len(rs.list)) // a new process's clients start with its own runs
	return rs, nil
}

// wake tells the readers something changed (under mu).
func (rs *runs) wake() {
	close(rs.woken)
	rs.woken = make(chan struct{})
}

// add starts a run: the one before is sealed (and cut where its pump
// goes on: its agent did not stop in time), and the oldest is let go
// past max.
func (rs *runs) add(rec runRecord) (*runEntry, error) {
	e := &runEntry{rec: rec, decided: -1, ending: make(chan struct{})}
	rs.mu.Lock()
	if n := len(rs.list); n > 0 {
		prev := rs.list[n-1]
		prev.sealed = true
		if !prev.final {
			rs.cut(prev)
		}
	}
	rs.list = append(rs.list, e)
	if drop := len(rs.list) - rs.max; drop > 0 {
		clear(rs.list[:drop])
		rs.list = rs.list[drop:]
		rs.base += int64(drop)
	}
	rs.wake()
	rs.mu.Unlock()
	return e, rs.save()
}

// cut ends e's stream at what its pump decided so far (under mu).
func (rs *runs) cut(e *runEntry) {
	if e.rec.Cut != nil {
		return
	}
	cut := e.decided
	e.rec.Cut = &cut
	if !e.final {
		close(e.ending)
	}
}

// stopAt ends a live run's stream at what its pump decided so far: the
// run is being stopped, and what its agent does while it stops is not
// part of it.
func (rs *runs) stopAt(e *runEntry) error {
	rs.mu.Lock()
	live := !e.final && e.rec.Cut == nil
	if live {
		rs.cut(e)
		rs.wake()
	}
	rs.mu.Unlock()
	if !live {
		return nil
	}
	return rs.save()
}

// pastCut says whether canonical seq is past the run's cut.
func (rs *runs) pastCut(e *runEntry, seq int64) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return e.rec.Cut != nil && seq > *e.rec.Cut
}

// shownEnd is the last canonical seq of the run the stream shows, or
// will: its cut, or what its pump decided so far.
func (rs *runs) shownEnd(e *runEntry) int64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if e.rec.Cut != nil {
		return *e.rec.Cut
	}
	return e.decided
}

// end is the run's last canonical seq, once it is known (under mu).
func (e *runEntry) end() (int64, bool) {
	switch {
	case e.rec.Cut != nil:
		return *e.rec.Cut, true
	case e.final:
		return e.decided, true
	}
	return 0, false
}

// decide records what the pump decided of a run up to canonical seq
// (change adds its marks and uris) and how many events that made, and
// shows it to the readers once saved. Nothing past a cut counts.
func (rs *runs) decide(e *runEntry, seq int64, events int64, change func(*runRecord)) error {
	rs.mu.Lock()
	if e.rec.Cut != nil && seq > *e.rec.Cut {
		rs.mu.Unlock()
		return nil
	}
	var err error
	if change != nil {
		change(&e.rec)
		rs.mu.Unlock()
		err = rs.save()
		rs.mu.Lock()
	}
	e.shown = len(e.rec.Marks)
	e.decided = max(e.decided, seq)
	e.count += events
	rs.wake()
	rs.mu.Unlock()
	return err
}

// mark adds events of the shim's own after the run's end (a kill's, a
// pause's) and shows them once saved.
func (rs *runs) mark(e *runEntry, at time.Time, events ...Event) error {
	rs.mu.Lock()
	e.rec.Marks = append(e.rec.Marks, mark{After: endOfRun, At: at, Events: events})
	rs.mu.Unlock()
	err := rs.save()
	rs.mu.Lock()
	e.shown = len(e.rec.Marks)
	e.count += int64(len(events))
	rs.wake()
	rs.mu.Unlock()
	return err
}

// crash cuts the run where its pump stopped and adds what tells why.
func (rs *runs) crash(e *runEntry, at time.Time, events ...Event) error {
	rs.mu.Lock()
	rs.cut(e)
	rs.mu.Unlock()
	return rs.mark(e, at, events...)
}

// checkpoint notes where the run's stream is after canonical seq, for
// readers resuming after it; not once events of the run's end are in
// (they are counted, but come after what is still to be decided).
func (rs *runs) checkpoint(e *runEntry, seq int64, st mapperState) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	marks := len(e.rec.Marks)
	if e.decided != seq || (marks > 0 && e.rec.Marks[marks-1].After == endOfRun) {
		return
	}
	e.checkpoints = append(e.checkpoints, checkpoint{seq: seq, count: e.count, marks: marks, mapper: st})
}

// checkpointFor is the last checkpoint of the run at or before the
// stream's event n (false: none; start from the run's beginning).
func (rs *runs) checkpointFor(e *runEntry, n int64) (checkpoint, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	i := sort.Search(len(e.checkpoints), func(i int) bool { return e.checkpoints[i].count > n })
	if i == 0 {
		return checkpoint{}, false
	}
	return e.checkpoints[i-1], true
}

// finish notes that the run's pump has ended.
func (rs *runs) finish(e *runEntry) {
	rs.mu.Lock()
	if !e.final && e.rec.Cut == nil {
		close(e.ending)
	}
	e.final = true
	rs.wake()
	rs.mu.Unlock()
}

// count is how many events the run's stream has so far.
func (rs *runs) count(e *runEntry) int64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return max(e.count, 0)
}

// save writes every run's record to the file, when there is one.
func (rs *runs) save() error {
	if rs.file == "" {
		return nil
	}
	rs.saving.Lock()
	defer rs.saving.Unlock()
	rs.mu.Lock()
	recs := make([]runRecord, len(rs.list))
	for i, e := range rs.list {
		recs[i] = e.rec
	}
	data, err := json.Marshal(recs)
	rs.mu.Unlock()
	if err != nil {
		return fmt.Errorf("shim: runs: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(rs.file), ".shim-runs-*")
	if err != nil {
		return fmt.Errorf("shim: runs: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("shim: runs: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("shim: runs: %w", err)
	}
	if err := os.Rename(tmp.Name(), rs.file); err != nil {
		return fmt.Errorf("shim: runs: %w", err)
	}
	return nil
}

// entry is run number n, or nil once it is let go; ok is false when
// there is none yet.
func (rs *runs) entry(n int64) (e *runEntry, ok bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	switch {
	case n < rs.base:
		return nil, true
	case n-rs.base >= int64(len(rs.list)):
		return nil, false
	}
	return rs.list[n-rs.base], true
}

// start is where a client begins: after the event it names (a run id
// and a sequence; 0 is before the run's first), or, with no run, after
// what was already delivered to some client (so events emitted while
// nobody listened, and while a client reconnects, still arrive, as the
// reference shims' buffers hand them over); all asks for every run kept.
// A run not kept (or never had) is ErrGone; a sequence the run has not
// reached is ErrOutOfRange (a client only learns sequences from the
// stream, so it names one there is or none). count counts a run of an
// earlier process.
func (rs *runs) start(ctx context.Context, run string, seq int64, all bool, count func(context.Context, *runEntry) (int64, error)) (cursor, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	switch {
	case all:
		return cursor{run: rs.base}, nil
	case run == "":
		if rs.deliveredRun < rs.base {
			return cursor{run: rs.base}, nil
		}
		return cursor{run: rs.deliveredRun, seq: rs.deliveredSeq}, nil
	case seq < 0:
		return cursor{}, &RangeError{Field: "after", Value: strconv.FormatInt(seq, 10), Reason: "a sequence is 0 or more"}
	}
	e := rs.find(run)
	if e == nil {
		return cursor{}, fmt.Errorf("%w: no run %q", ErrGone, run)
	}
	if e.count < 0 { // a run of an earlier process: counted once, from the log
		rs.mu.Unlock()
		n, err := count(ctx, e)
		rs.mu.Lock()
		if err != nil {
			return cursor{}, err
		}
		e.count = n
	}
	if seq > e.count {
		return cursor{}, &RangeError{Field: "after", Value: strconv.FormatInt(seq, 10),
			Reason: fmt.Sprintf("run %s has %d events so far", run, e.count)}
	}
	for i, kept := range rs.list {
		if kept == e {
			return cursor{run: rs.base + int64(i), seq: seq}, nil
		}
	}
	return cursor{}, fmt.Errorf("%w: run %q is no longer kept", ErrGone, run)
}

// find is the run of that id (under mu), or nil.
func (rs *runs) find(id string) *runEntry {
	for _, e := range rs.list {
		if e.rec.ID == id {
			return e
		}
	}
	return nil
}

// delivered notes an event written to a client.
func (rs *runs) delivered(c cursor) {
	rs.mu.Lock()
	if c.run > rs.deliveredRun || (c.run == rs.deliveredRun && c.seq > rs.deliveredSeq) {
		rs.deliveredRun, rs.deliveredSeq = c.run, c.seq
	}
	rs.mu.Unlock()
}

// undelivered counts the events no client has been sent yet.
func (rs *runs) undelivered() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n := int64(0)
	for i, e := range rs.list {
		run := rs.base + int64(i)
		switch {
		case run < rs.deliveredRun || e.count < 0:
		case run == rs.deliveredRun:
			n += max(e.count-rs.deliveredSeq, 0)
		default:
			n += e.count
		}
	}
	return int(n)
}
