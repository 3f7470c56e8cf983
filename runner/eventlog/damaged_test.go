package eventlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/boltpages"
)

// damagedLogSessions is how many sessions damagedLog writes.
const damagedLogSessions = 12

// damagedLog writes a log as a runner leaves it: sessions with small
// events committed a few at a time, one large batch (runs of their own
// buckets), metadata, a gap, and free pages (retention); then closes it.
// It returns the path and every session's last seq.
func damagedLog(t testing.TB) (string, map[string]uint64) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	l, err := Open(path, Options{FlushInterval: time.Hour, MaxEventsPerSession: 400})
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]uint64{}
	for round := range 30 {
		for i := range damagedLogSessions {
			name := fmt.Sprintf("ses_%02d", i)
			for range 1 + (i+round)%5 {
				seq, err := l.Append(ctx, name, []byte(payloadOf(name, last[name]+1)))
				if err != nil {
					t.Fatal(err)
				}
				last[name] = seq
			}
			if round == 3 {
				if err := l.SetMeta(name, []byte("meta of "+name)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := l.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	batch := make([][]byte, 300)
	for i := range batch {
		batch[i] = []byte(payloadOf("ses_big", uint64(i+1)))
	}
	if _, err := l.AppendBatch(ctx, "ses_big", batch); err != nil {
		t.Fatal(err)
	}
	if err := l.Skip("ses_big", 310); err != nil {
		t.Fatal(err)
	}
	seq, err := l.Append(ctx, "ses_big", []byte(payloadOf("ses_big", 311)))
	if err != nil || seq != 311 {
		t.Fatalf("append after the gap: %d %v", seq, err)
	}
	last["ses_big"] = 311
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path, last
}

// payloadOf is the payload of a session's event: it names both, so an
// event saved into the wrong session or with the wrong seq shows.
func payloadOf(session string, seq uint64) string {
	return fmt.Sprintf("%s/%d/%s", session, seq, strings.Repeat("x", int(seq%7)*40))
}

func overwritePage(t testing.TB, path string, id int) { boltpages.Overwrite(t, path, id, 1) }

// treePages lists the pages of the file that hold its trees (branches
// and leaves), as bbolt sees them: bbolt reuses free pages in no fixed
// order, so where they are changes from run to run.
func treePages(t testing.TB, path string) []int {
	t.Helper()
	var ids []int
	for _, p := range boltpages.List(t, path) {
		if p.Type == "leaf" || p.Type == "branch" {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// usedPages is how many pages of the file bbolt uses (its meta's count).
func usedPages(t testing.TB, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The meta's page count is at offset 16+40 of each meta page; the
	// newer meta has the higher transaction id (at 16+48).
	var pgid, txid uint64
	for _, at := range []int{0, os.Getpagesize()} {
		m := b[at+16:]
		if tx := leUint64(m[48:]); tx >= txid {
			txid, pgid = tx, leUint64(m[40:])
		}
	}
	return int(pgid)
}

func leUint64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func TestOpenRefusesAnOverwrittenPage(t *testing.T) {
	path, _ := damagedLog(t)
	tree := treePages(t, path)
	overwritePage(t, path, tree[len(tree)/2])
	_, err := Open(path, Options{})
	var damaged *DamagedError
	if !errors.As(err, &damaged) || !errors.Is(err, ErrDamaged) || !errors.Is(err, ErrCorrupt) || damaged.Path != path {
		t.Fatalf("Open: %v, want a *DamagedError for %s", err, path)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, path+" is damaged: ") || strings.Contains(msg, "\n") {
		t.Fatalf("message %q", msg)
	}
	t.Log(err)
}

func TestOpenRefusesACutFile(t *testing.T) {
	path, _ := damagedLog(t)
	if err := os.Truncate(path, int64(usedPages(t, path)/2*os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, Options{})
	var damaged *DamagedError
	if !errors.As(err, &damaged) || !strings.Contains(damaged.Reason, "cut short") {
		t.Fatalf("Open: %v, want a *DamagedError saying the file is cut short", err)
	}
	t.Log(err)
}

// An empty file is not damaged: bbolt makes a new log of it, as of a file
// that is not there.
func TestOpenEmptyFileIsANewLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l := reopen(t, path, Options{})
	mustAppend(t, l, "s", []byte("x"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = reopen(t, path, Options{})
	if last, err := l.Last("s"); err != nil || last != 1 {
		t.Fatalf("Last after reopen: %d %v", last, err)
	}
}
