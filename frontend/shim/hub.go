package shim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// DefaultRetain is how many envelopes the shim keeps for clients to
// replay: every run's, across spawns and resumes, up to this many.
const DefaultRetain = 200_000

// ErrGone: a client asked to resume from an event the shim no longer
// keeps (past Retain) or never had (an unknown run).
var ErrGone = errors.New("shim: no such event to resume from")

// hub is every envelope of the process, in order, by position (from 1),
// and the clients that follow it. Each client reads at its own cursor, so
// every client gets the whole stream, a slow one only lags, and nothing
// is dropped while retained.
type hub struct {
	retain int

	mu        sync.Mutex
	frames    [][]byte // encoded envelopes; frames[0] is at position base+1
	keys      []cursor // the (run, seq) of each frame
	base      int64
	delivered int64         // the highest position written to any client
	woken     chan struct{} // closed and replaced on every append
}

// cursor names one event: its run and its sequence in the run.
type cursor struct {
	run string
	seq int64
}

func newHub(retain int) *hub {
	if retain <= 0 {
		retain = DefaultRetain
	}
	return &hub{retain: retain, woken: make(chan struct{})}
}

// append adds one encoded envelope and wakes the clients.
func (h *hub) append(frame []byte, key cursor) {
	h.mu.Lock()
	h.frames = append(h.frames, frame)
	h.keys = append(h.keys, key)
	if len(h.frames) > h.retain {
		drop := len(h.frames) - h.retain
		h.frames = append([][]byte(nil), h.frames[drop:]...)
		h.keys = append([]cursor(nil), h.keys[drop:]...)
		h.base += int64(drop)
	}
	close(h.woken)
	h.woken = make(chan struct{})
	h.mu.Unlock()
}

// undelivered counts the frames no client has been sent yet.
func (h *hub) undelivered() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return int(h.base + int64(len(h.frames)) - max(h.delivered, h.base))
}

// start is the position a client begins after: after the event it names
// (a run id and a sequence; 0 is before the run's first), or, with no
// run, after what was already delivered to some client (so events
// emitted while nobody listened, and while a client reconnects, still
// arrive, as the reference shims' buffers hand them over); all asks for
// everything retained. An event of the run after seq that is no longer
// kept, or a run not kept at all, is ErrGone; a sequence the run has not
// reached is ErrOutOfRange (a client only learns sequences from the
// stream, so it names one there is or none).
func (h *hub) start(run string, seq int64, all bool) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case all:
		return h.base, nil
	case run == "":
		return max(h.delivered, h.base), nil
	case seq < 0:
		return 0, &RangeError{Field: "after", Value: strconv.FormatInt(seq, 10), Reason: "a sequence is 0 or more"}
	}
	first, last := -1, -1 // the run's first and last kept frames
	for i, k := range h.keys {
		if k.run == run {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	switch {
	case first < 0:
		return 0, fmt.Errorf("%w: no run %q", ErrGone, run)
	case seq > h.keys[last].seq:
		return 0, &RangeError{Field: "after", Value: strconv.FormatInt(seq, 10),
			Reason: fmt.Sprintf("run %s has %d events so far", run, h.keys[last].seq)}
	case h.keys[first].seq-1 > seq: // events between seq and the first kept are gone
		return 0, fmt.Errorf("%w: event %d of run %s is no longer kept", ErrGone, seq+1, run)
	}
	for i := first; i <= last; i++ {
		if k := h.keys[i]; k.run == run && k.seq == seq {
			return h.base + int64(i) + 1, nil // right after it
		}
	}
	return h.base + int64(first), nil // seq is just before the first kept
}

// follow hands every frame after position `after` to send, in order, then
// each new one as it is appended, until ctx ends or send fails.
func (h *hub) follow(ctx context.Context, after int64, send func([]byte) error) error {
	for {
		h.mu.Lock()
		if after < h.base {
			h.mu.Unlock()
			return fmt.Errorf("%w: the client fell %d events behind what is kept", ErrGone, h.base-after)
		}
		batch := h.frames[after-h.base:]
		woken := h.woken
		h.mu.Unlock()
		for _, f := range batch {
			if err := send(f); err != nil {
				return err
			}
			after++
			h.markDelivered(after)
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (h *hub) markDelivered(pos int64) {
	h.mu.Lock()
	h.delivered = max(h.delivered, pos)
	h.mu.Unlock()
}
