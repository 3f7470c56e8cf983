package eventlog

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testing/boltpages"
	"github.com/tetherhq/tether/runner/eventlog/boltfile"
)

// checkSalvaged opens the salvaged log and checks every event it holds
// against what was written, the report against the log, and that each
// session goes on after the last seq the damaged log had. It returns how
// many events the log holds.
func checkSalvaged(t testing.TB, path string, rep *SalvageReport, last map[string]uint64) int {
	t.Helper()
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("the salvaged log does not open: %v", err)
	}
	defer l.Close()
	names, _ := l.Sessions()
	if len(names) != len(rep.Sessions) {
		t.Fatalf("the log has %d sessions, the report %d", len(names), len(rep.Sessions))
	}
	total := 0
	for _, s := range rep.Sessions {
		evs, err := readAll(l, s.Name, 0)
		if errors.Is(err, ErrTruncated) && s.Saved > 0 { // the head was lost: read from the first one kept
			evs, err = readAll(l, s.Name, s.First-1)
		} else if errors.Is(err, ErrTruncated) || errors.Is(err, ErrAhead) {
			evs, err = nil, nil // none saved
		}
		if err != nil {
			t.Fatalf("session %s: %v", s.Name, err)
		}
		if len(evs) != s.Saved {
			t.Fatalf("session %s: %d events read, %d saved", s.Name, len(evs), s.Saved)
		}
		for _, ev := range evs {
			if want := payloadOf(s.Name, ev.Seq); string(ev.Payload) != want {
				t.Fatalf("session %s event %d: %q, want %q", s.Name, ev.Seq, ev.Payload, want)
			}
		}
		// The last seq goes on from the damaged log's, unless the
		// session's record was lost (then the last saved), or the
		// session is not one of the damaged log's (added after it was
		// taken: ses_tail).
		got, _ := l.Last(s.Name)
		if _, known := last[s.Name]; got != s.LastSeq || known && s.LastSeq != last[s.Name] && !s.RecordLost {
			t.Fatalf("session %s: last seq %d, the damaged log had %d (report %+v)", s.Name, got, last[s.Name], s)
		}
		if meta, _ := l.Meta(s.Name); s.Meta && string(meta) != "meta of "+s.Name && s.Name != "ses_big" {
			t.Fatalf("session %s: meta %q", s.Name, meta)
		}
		total += len(evs)
	}
	return total
}

// Whichever page of its trees is overwritten, Open refuses the log with a
// *DamagedError, and Salvage saves only events as they were written, into
// a log that opens and goes on after the damaged one's last seqs.
func TestSalvageEveryPage(t *testing.T) {
	path, last := damagedLog(t)
	var wrote int
	for _, n := range last {
		wrote += int(min(n, 400))
	}
	partial := 0
	for _, id := range treePages(t, path) {
		damaged := filepath.Join(t.TempDir(), "events.db")
		boltpages.Copy(t, path, damaged)
		overwritePage(t, damaged, id)
		_, err := Open(damaged, Options{})
		var de *DamagedError
		if !errors.As(err, &de) {
			t.Fatalf("page %d: Open: %v, want a *DamagedError", id, err)
		}
		out := filepath.Join(t.TempDir(), "salvaged.db")
		rep, err := Salvage(context.Background(), damaged, out)
		if err != nil {
			t.Fatalf("page %d: Salvage: %v", id, err)
		}
		if n := checkSalvaged(t, out, rep, last); n < wrote {
			partial++
		}
	}
	if partial == 0 {
		t.Fatal("no salvage lost an event")
	}
}

// A log whose pages are intact but for one overwritten leaf of a
// session's events loses only the events that leaf held; the session goes
// on after them, the others are whole, and Salvage never writes the
// damaged file.
func TestSalvageLosesOnlyTheDamagedPage(t *testing.T) {
	path, last := damagedLog(t)
	var id int
	var rep *SalvageReport
	for id = usedPages(t, path) - 1; id > 2; id-- { // a page whose loss is one session's
		damaged := filepath.Join(t.TempDir(), "events.db")
		boltpages.Copy(t, path, damaged)
		overwritePage(t, damaged, id)
		if l, err := Open(damaged, Options{}); err == nil { // a value's bytes: the structure is whole
			l.Close()
			continue
		}
		before, err := os.ReadFile(damaged)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Salvage(context.Background(), damaged, filepath.Join(t.TempDir(), "salvaged.db"))
		if err != nil {
			t.Fatal(err)
		}
		if after, _ := os.ReadFile(damaged); !bytes.Equal(before, after) {
			t.Fatal("Salvage changed the damaged file")
		}
		incomplete := 0
		for _, s := range r.Sessions {
			if !s.Complete() {
				incomplete++
			}
		}
		if len(r.Sessions) == damagedLogSessions+1 && incomplete == 1 && len(r.Lost) == 0 {
			rep = r
			break
		}
	}
	if rep == nil {
		t.Fatal("no page whose loss is one session's events")
	}
	for _, s := range rep.Sessions {
		if s.Complete() {
			continue
		}
		if len(s.Missing) == 0 || s.LastSeq != last[s.Name] {
			t.Fatalf("page %d: session %+v", id, s)
		}
		t.Logf("page %d: session %s saved %d events (%d..%d), missing %v: %v", id, s.Name, s.Saved, s.First, s.Last, s.Missing, s.Problems)
	}
}

// A file cut short keeps what its remaining pages hold, as long as the
// way to them is among them; whatever the cut, what is saved is as it was
// written, and what is not is said.
func TestSalvageCutFile(t *testing.T) {
	orig, last := damagedLog(t)
	for _, keep := range []float64{0.3, 0.5, 0.7, 0.9} {
		path := filepath.Join(t.TempDir(), "events.db")
		boltpages.Copy(t, orig, path)
		if err := os.Truncate(path, int64(float64(usedPages(t, path))*keep)*int64(os.Getpagesize())); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "salvaged.db")
		rep, err := Salvage(context.Background(), path, out)
		if err != nil {
			t.Fatal(err)
		}
		n := checkSalvaged(t, out, rep, last)
		for _, s := range rep.Sessions {
			if !s.Complete() && len(s.Problems) == 0 {
				t.Fatalf("%.0f%% kept: session %s is not whole, and no word of why: %+v", keep*100, s.Name, s)
			}
		}
		if len(rep.Sessions) < damagedLogSessions+1 && len(rep.Lost) == 0 {
			t.Fatalf("%.0f%% kept: sessions lost, and no word of it: %+v", keep*100, rep)
		}
		t.Logf("%.0f%% kept: %d events of %d sessions saved; %s; lost: %v", keep*100, n, len(rep.Sessions), rep.Note, rep.Lost)
	}
}

// A log cut where its last transaction grew it loses that transaction
// only: the tree the one before left is whole, and every session of it is
// saved.
func TestSalvageCutOffTheLastTransaction(t *testing.T) {
	path, last := damagedLog(t)
	before := usedPages(t, path)
	l := reopen(t, path, Options{})
	batch := make([][]byte, 2000) // more than the free pages hold: the file grows
	for i := range batch {
		batch[i] = []byte(payloadOf("ses_tail", uint64(i+1)))
	}
	if _, err := l.AppendBatch(context.Background(), "ses_tail", batch); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if usedPages(t, path) <= before {
		t.Fatal("the file did not grow")
	}
	if err := os.Truncate(path, int64(before*os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "salvaged.db")
	rep, err := Salvage(context.Background(), path, out)
	if err != nil {
		t.Fatal(err)
	}
	checkSalvaged(t, out, rep, last)
	whole := 0
	for _, s := range rep.Sessions {
		if s.Complete() && s.Name != "ses_tail" {
			whole++
		}
	}
	if whole != damagedLogSessions+1 {
		t.Fatalf("%d sessions saved whole, want %d: %+v", whole, damagedLogSessions+1, rep)
	}
	t.Logf("%s; lost: %v", rep.Note, rep.Lost)
}

func TestSalvageOfNoLogAtAll(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "events.db")
	if err := os.WriteFile(src, bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "salvaged.db")
	rep, err := Salvage(context.Background(), src, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sessions) != 0 || len(rep.Lost) != 1 || !strings.Contains(rep.Lost[0], "not a bbolt file") {
		t.Fatalf("%+v", rep)
	}
	l := reopen(t, out, Options{}) // an empty log, to start again on
	if names, _ := l.Sessions(); len(names) != 0 {
		t.Fatal(names)
	}
	if _, err := Salvage(context.Background(), src, out); err == nil {
		t.Fatal("Salvage into an existing file")
	}
}

func TestSalvageRefusesALogInUse(t *testing.T) {
	l, path := open(t, Options{})
	mustAppend(t, l, "s", []byte("x"))
	_, err := Salvage(context.Background(), path, filepath.Join(t.TempDir(), "out.db"))
	if !errors.Is(err, boltfile.ErrInUse) {
		t.Fatalf("Salvage of a log in use: %v", err)
	}
}
