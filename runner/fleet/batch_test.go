package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/agent"
)

// A batch's events come back from its message as they went in, a lone
// event as its payload alone.
func TestBatchRoundTrip(t *testing.T) {
	for _, seqs := range [][]uint64{{7}, {1, 2}, {3, 4, 9, 10}} { // a gap of the log may fall inside
		var b batch
		for _, seq := range seqs {
			b.add(seq, []byte(`{"seq":`+strconv.FormatUint(seq, 10)+`}`))
		}
		m := b.msg("tether.events.s", "r0")
		if len(seqs) == 1 && (m.Header.Get(eventsHeader) != "" || string(m.Data) != `{"seq":7}`) {
			t.Fatalf("a lone event: %v %q", m.Header, m.Data)
		}
		got, err := splitBatch(m.Header, m.Data)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(seqs) {
			t.Fatalf("%v: got %d events", seqs, len(got))
		}
		for i, e := range got {
			if e.seq != seqs[i] || string(e.payload) != `{"seq":`+strconv.FormatUint(seqs[i], 10)+`}` {
				t.Fatalf("%v: event %d is %d %q", seqs, i, e.seq, e.payload)
			}
		}
		if m.Header.Get(seqHeader) != strconv.FormatUint(seqs[len(seqs)-1], 10) {
			t.Fatalf("%v: %s %q", seqs, seqHeader, m.Header.Get(seqHeader))
		}
	}
}

// A batch stops at its bounds; an event larger than a batch goes alone.
func TestBatchBounds(t *testing.T) {
	var b batch
	small := bytes.Repeat([]byte("x"), 100)
	for b.fits(len(small)) {
		b.add(uint64(b.n+1), small)
	}
	if b.n != maxBatchEvents {
		t.Fatalf("a batch of small events holds %d, want %d", b.n, maxBatchEvents)
	}
	var big batch
	huge := bytes.Repeat([]byte("y"), maxBatchBytes+1)
	if !big.fits(len(huge)) {
		t.Fatal("an event larger than a batch does not go alone")
	}
	big.add(1, huge)
	if big.fits(1) {
		t.Fatal("an event joins one larger than a batch")
	}
	var half batch
	half.add(1, bytes.Repeat([]byte("z"), maxBatchBytes/2))
	if half.fits(maxBatchBytes / 2) {
		t.Fatal("a batch grows past its bytes")
	}
}

// A message that does not hold what its headers say is a typed error,
// never a panic or a short read.
func TestSplitBatchRejectsBadMessages(t *testing.T) {
	frames := func(seqs ...uint64) []byte {
		var out []byte
		for _, s := range seqs {
			out = appendFrame(out, s, []byte("{}"))
		}
		return out
	}
	h := func(last, n string) nats.Header {
		h := nats.Header{}
		h.Set(seqHeader, last)
		if n != "" {
			h.Set(eventsHeader, n)
		}
		return h
	}
	for name, c := range map[string]struct {
		h    nats.Header
		data []byte
	}{
		"count not a number": {h("2", "two"), frames(1, 2)},
		"count zero":         {h("2", "0"), frames(1, 2)},
		"count past bound":   {h("2", "100000"), frames(1, 2)},
		"fewer than said":    {h("2", "3"), frames(1, 2)},
		"more than said":     {h("3", "2"), frames(1, 2, 3)},
		"last not as said":   {h("5", "2"), frames(1, 2)},
		"out of order":       {h("1", "2"), frames(2, 1)},
		"a seq twice":        {h("2", "2"), frames(2, 2)},
		"truncated payload":  {h("2", "2"), frames(1, 2)[:7]},
		"truncated length":   {h("2", "2"), append(frames(1), 2)},
		"empty":              {h("2", "2"), nil},
	} {
		if _, err := splitBatch(c.h, c.data); !errors.Is(err, ErrBadBatch) {
			t.Errorf("%s: %v, want ErrBadBatch", name, err)
		}
	}
	if events, err := splitBatch(nats.Header{}, []byte("{}")); events != nil || err != nil {
		t.Fatalf("a message without %s: %v %v, want no event", seqHeader, events, err)
	}
}

func FuzzSplitBatch(f *testing.F) {
	var b batch
	b.add(1, []byte(`{"kind":"session.started"}`))
	b.add(2, []byte(`{"kind":"turn.started"}`))
	m := b.msg("s", "r")
	f.Add(m.Data, m.Header.Get(seqHeader), m.Header.Get(eventsHeader))
	f.Add([]byte(`{}`), "1", "")
	f.Fuzz(func(t *testing.T, data []byte, last, n string) {
		h := nats.Header{}
		h.Set(seqHeader, last)
		if n != "" {
			h.Set(eventsHeader, n)
		}
		events, err := splitBatch(h, data)
		if err != nil || n == "" {
			return
		}
		// What splits framed again is the same message.
		var again batch
		for _, e := range events {
			again.add(e.seq, e.payload)
		}
		if len(events) > 1 && !bytes.Equal(again.framed, data) {
			t.Fatalf("%q split and framed again is %q", data, again.framed)
		}
	})
}

// Events the log gained while the publisher was away go as few messages
// as the batch's bounds allow, each event once.
func TestPublisherBatchesWhatTheLogHolds(t *testing.T) {
	f := openLone(t, "a")
	l := f.Log(openLog(t))
	const n = 2*maxBatchEvents + 10
	for range n {
		appendEvents(t, l, "s", agent.KindItemDelta)
	}
	publishing(t, f)
	syncStream(t, f)
	got := storedSeqs(t, f, "s")
	if len(got) != n || got[0] != 1 || got[n-1] != n {
		t.Fatalf("the stream holds %d events, %v…, want 1…%d", len(got), got[:min(len(got), 5)], n)
	}
	info, err := f.events.Info(context.Background())
	if err != nil || info.State.Msgs != 3 {
		t.Fatalf("the stream holds %d messages (%v), want 3 for %d events", info.State.Msgs, err, n)
	}
}

// A publish that landed but whose ack was lost is not stored twice: the
// publisher asks the stream where it ends and goes on from there.
func TestPublisherLostAckSendsNothingTwice(t *testing.T) {
	f := openLone(t, "a")
	l := f.Log(openLog(t))
	publishing(t, f)
	appendEvents(t, l, "s", agent.KindSessionStarted, agent.KindTurnStarted)
	syncStream(t, f)
	// As if the batch of 1 and 2 were still waiting for its ack when the
	// log gained 3 and 4, and then timed out: a publisher that sent again
	// from its last ack would send 1 to 4, under a message id the stream
	// has not seen.
	f.pub.mu.Lock()
	st := f.pub.state["s"]
	st.seq, st.streamSeq, st.next = 0, 0, 0
	lost := sent{session: "s", seq: 2, epoch: st.epoch}
	f.pub.mu.Unlock()
	appendEvents(t, l, "s", agent.KindTurnCompleted, agent.KindSessionEnded)
	f.pub.failed(context.Background(), lost, st, errNoAck)
	syncStream(t, f)
	if got := storedSeqs(t, f, "s"); fmt.Sprint(got) != "[1 2 3 4]" {
		t.Fatalf("the stream holds %v", got)
	}
	if got := seqs(readAll(t, f, "s", 0)); fmt.Sprint(got) != "[1 2 3 4]" {
		t.Fatalf("read %v", got)
	}
}

// fakeAck is a publish's future that has its ack already.
type fakeAck struct{ ok chan *jetstream.PubAck }

func (f fakeAck) Ok() <-chan *jetstream.PubAck { return f.ok }
func (f fakeAck) Err() <-chan error            { return nil }
func (f fakeAck) Msg() *nats.Msg               { return nil }

// A session marked while its batch is in flight is published once the ack
// comes, even when the mark does not say how far its log goes.
func TestPublisherSendsWhatCameWhileInFlight(t *testing.T) {
	f := openLone(t, "a")
	local := openLog(t)
	l := f.Log(local)
	publishing(t, f)
	appendEvents(t, l, "s", agent.KindSessionStarted)
	syncStream(t, f)
	// A batch in flight, and an event the log gained without a mark that
	// says its seq (as a runner's start marks its sessions).
	f.pub.mu.Lock()
	st := f.pub.state["s"]
	st.inFlight++
	f.pub.inFlight++
	inFlight := sent{session: "s", seq: st.seq, epoch: st.epoch, fut: fakeAck{ok: make(chan *jetstream.PubAck, 1)}}
	inFlight.fut.(fakeAck).ok <- &jetstream.PubAck{Sequence: st.streamSeq}
	f.pub.mu.Unlock()
	if _, _, err := local.AppendAt(context.Background(), "s", [][]byte{[]byte(`{"kind":"session.ended","session_id":"s","time":"2026-11-28T00:00:00Z","session":{"agent":"mock"}}`)}); err != nil {
		t.Fatal(err)
	}
	f.pub.mark("s", 0)
	syncRound(t, f) // the round passes the session by: its batch is in flight
	f.pub.sent <- inFlight
	syncStream(t, f)
	if got := storedSeqs(t, f, "s"); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("the stream holds %v", got)
	}
}

// syncRound waits until the publisher has taken every mark.
func syncRound(t *testing.T, f *Fleet) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		f.pub.mu.Lock()
		idle := len(f.pub.dirty) == 0 && !f.pub.busy
		f.pub.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the publisher did not take its marks")
		}
	}
}

// A runner whose log lost, in a crash, events it had published goes on
// after the stream's last once its log gets there: nothing stalls, and
// no seq is stored twice.
func TestPublisherAfterALogThatLostEvents(t *testing.T) {
	f := openLone(t, "a")
	before := f.Log(openLog(t)) // the log as it was before the crash
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.pub.run(ctx) }()
	appendEvents(t, before, "s", agent.KindSessionStarted, agent.KindTurnStarted, agent.KindItemDelta, agent.KindItemDelta)
	syncStream(t, f)
	cancel()
	<-done

	l := f.Log(openLog(t)) // after it: two events of four kept
	appendEvents(t, l, "s", agent.KindSessionStarted, agent.KindTurnStarted)
	publishing(t, f)
	f.pub.mark("s", 0)
	syncStream(t, f) // nothing to send yet, and nothing to try again
	appendEvents(t, l, "s", agent.KindTurnCompleted, agent.KindItemDelta, agent.KindSessionEnded)
	syncStream(t, f)
	if got := storedSeqs(t, f, "s"); fmt.Sprint(got) != "[1 2 3 4 5]" {
		t.Fatalf("the stream holds %v", got)
	}
	events := readAll(t, f, "s", 0)
	if got := seqs(events); fmt.Sprint(got) != "[1 2 3 4 5]" || events[4].Kind != agent.KindSessionEnded {
		t.Fatalf("read %v", got)
	}
}
