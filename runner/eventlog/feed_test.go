package eventlog

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// feedAll reads the feed after `after` to its end.
func feedAll(t *testing.T, l *Bolt, after uint64) ([]FeedEntry, error) {
	t.Helper()
	var out []FeedEntry
	for fe, err := range l.Feed(context.Background(), after) {
		if err != nil {
			return out, err
		}
		fe.Payload = clone(fe.Payload)
		out = append(out, fe)
	}
	return out, nil
}

// Events of several sessions, appended in turn, singly and in batches,
// are the feed's positions 1..n in that order, each with its session,
// seq and payload, whether the reader finds them in memory or on disk,
// from the start or from any position; and a reopened log keeps the
// numbering and goes on after it.
func TestFeedNumbersEveryAppend(t *testing.T) {
	l, path := open(t, Options{})
	type want struct {
		session string
		seq     uint64
		payload string
	}
	var wants []want
	for i := range 30 {
		session := fmt.Sprintf("s%d", i%3)
		if i%5 == 0 {
			p := [][]byte{[]byte(fmt.Sprintf("b%d-1", i)), []byte(fmt.Sprintf("b%d-2", i))}
			first, pos, err := l.AppendAt(context.Background(), session, p)
			if err != nil || pos != uint64(len(wants)+1) {
				t.Fatalf("AppendAt: %d %d %v", first, pos, err)
			}
			wants = append(wants, want{session, first, string(p[0])}, want{session, first + 1, string(p[1])})
			continue
		}
		p := fmt.Sprintf("e%d", i)
		seq := mustAppend(t, l, session, []byte(p))
		wants = append(wants, want{session, seq, p})
	}
	check := func(what string, l *Bolt, after int) {
		t.Helper()
		got, err := feedAll(t, l, uint64(after))
		if err != nil || len(got) != len(wants)-after {
			t.Fatalf("%s after %d: %d entries, %v", what, after, len(got), err)
		}
		for i, fe := range got {
			w := wants[after+i]
			if fe.Pos != uint64(after+i+1) || fe.Session != w.session || fe.Seq != w.seq || string(fe.Payload) != w.payload {
				t.Fatalf("%s after %d: entry %d = %d %s %d %q, want %+v", what, after, i, fe.Pos, fe.Session, fe.Seq, fe.Payload, w)
			}
		}
	}
	for _, after := range []int{0, 1, 7, len(wants) - 1, len(wants)} {
		check("in memory", l, after)
	}
	toDisk(t, l)
	for _, after := range []int{0, 3, 12, len(wants)} {
		check("on disk", l, after)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = reopen(t, path, Options{})
	check("reopened", l, 0)
	_, pos, err := l.AppendAt(context.Background(), "s9", [][]byte{[]byte("after")})
	if err != nil || pos != uint64(len(wants)+1) {
		t.Fatalf("the first append after reopening is at %d (%v), want %d", pos, err, len(wants)+1)
	}
	if last, _ := l.FeedLast(); last != pos {
		t.Fatalf("FeedLast = %d", last)
	}
}

// The feed keeps the newest MaxFeedEvents positions: an older one is
// ErrTruncated, a newer one reads; one past the end is ErrAhead. What a
// session's own retention dropped is passed over.
func TestFeedRetention(t *testing.T) {
	l, _ := open(t, Options{MaxFeedEvents: 10, MaxEventsPerSession: 4})
	for i := range 25 {
		mustAppend(t, l, fmt.Sprintf("s%d", i%2), []byte(fmt.Sprint(i)))
		if i%6 == 0 {
			toDisk(t, l)
		}
	}
	toDisk(t, l)
	first, _ := l.FeedFirst()
	if first < 10 || first > 16 {
		t.Fatalf("FeedFirst = %d after 25 events, keeping 10", first)
	}
	if _, err := feedAll(t, l, first-2); !errors.Is(err, ErrTruncated) {
		t.Fatalf("a reader before the feed's start: %v", err)
	}
	got, err := feedAll(t, l, first-1)
	if err != nil {
		t.Fatal(err)
	}
	// Each session keeps its last 4: the feed has those, in order.
	if len(got) != 8 {
		t.Fatalf("%d entries, want the 8 the sessions kept: %+v", len(got), got)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Pos <= got[i-1].Pos {
			t.Fatalf("positions %d then %d", got[i-1].Pos, got[i].Pos)
		}
	}
	if _, err := feedAll(t, l, 26); !errors.Is(err, ErrAhead) {
		t.Fatalf("a reader past the end: %v", err)
	}
}

// One session appending alone makes long feed runs; retention still
// keeps exactly the newest MaxFeedEvents positions, cutting a run that
// straddles the limit rather than keeping it whole.
func TestFeedRetentionCutsALongRun(t *testing.T) {
	l, path := open(t, Options{MaxFeedEvents: 10})
	var batch [][]byte
	for i := range 25 {
		batch = append(batch, []byte(fmt.Sprint(i)))
	}
	if _, _, err := l.AppendAt(context.Background(), "alone", batch); err != nil {
		t.Fatal(err)
	}
	toDisk(t, l)
	check := func(what string, l *Bolt) {
		t.Helper()
		if first, _ := l.FeedFirst(); first != 16 {
			t.Fatalf("%s: FeedFirst = %d after 25 events keeping 10, want 16", what, first)
		}
		if _, err := feedAll(t, l, 14); !errors.Is(err, ErrTruncated) {
			t.Fatalf("%s: a reader before the feed's start: %v", what, err)
		}
		got, err := feedAll(t, l, 15)
		if err != nil || len(got) != 10 {
			t.Fatalf("%s: %d entries, %v", what, len(got), err)
		}
		if got[0].Pos != 16 || got[0].Seq != 16 || string(got[0].Payload) != "15" {
			t.Fatalf("%s: the first kept entry is %d seq %d %q", what, got[0].Pos, got[0].Seq, got[0].Payload)
		}
	}
	check("open", l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check("reopened", reopen(t, path, Options{MaxFeedEvents: 10}))
}

// AppendAt hands back the log's own copies of the payloads: the caller's
// buffer is its own again, and what it keeps is what Read yields.
func TestAppendAtHandsBackTheLogsCopies(t *testing.T) {
	l, _ := open(t, Options{})
	buf := []byte("onetwo")
	payloads := [][]byte{buf[:3], buf[3:]}
	if _, _, err := l.AppendAt(context.Background(), "s", payloads); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXXX")
	if string(payloads[0]) != "one" || string(payloads[1]) != "two" {
		t.Fatalf("the payloads handed back changed with the caller's buffer: %q", payloads)
	}
	for ev, err := range l.Read(context.Background(), "s", 0) {
		if err != nil || &ev.Payload[0] != &payloads[ev.Seq-1][0] {
			t.Fatalf("Read does not yield the copies handed back: %v, event %d", err, ev.Seq)
		}
	}
}
