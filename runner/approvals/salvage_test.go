package approvals_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/boltpages"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog/boltfile"
)

// storeWithRecords writes 200 approvals of 8 sessions, every third one
// resolved, one with an input larger than a page; it returns the path and
// every record as it was left, by session and id.
func storeWithRecords(t testing.TB) (string, map[string]approvals.Record) {
	t.Helper()
	c := &clock{t: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "approvals.db")
	s, err := approvals.Open(path, c.now)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		a := approval(fmt.Sprintf("ses_%d", i%8), fmt.Sprintf("a%03d", i))
		a.Input = json.RawMessage(fmt.Sprintf(`{"command":%q}`, strings.Repeat("ls ", 10+i%30)))
		if i == 100 {
			a.Input = json.RawMessage(fmt.Sprintf(`{"content":%q}`, strings.Repeat("big ", 3000)))
		}
		if err := s.Add(a); err != nil {
			t.Fatal(err)
		}
		c.add(time.Second)
		if i%3 == 0 {
			if _, err := s.Resolve(a.SessionID, agent.Resolution{ApprovalID: a.ID, Decision: agent.Deny}); err != nil {
				t.Fatal(err)
			}
		}
	}
	records, err := s.List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]approvals.Record{}
	for _, r := range records {
		byKey[r.Approval.SessionID+"/"+r.Approval.ID] = r
	}
	return path, byKey
}

// pageOfType is a page of that type (bbolt's names: leaf, branch,
// overflow of a leaf holding a large value...), the nth from the end.
func pageOfType(t testing.TB, path, typ string, n int) int {
	t.Helper()
	var ids []int
	for _, p := range boltpages.List(t, path) {
		if p.Type == typ {
			ids = append(ids, p.ID)
		}
		if typ == "overflow" && p.Overflow > 0 {
			ids = append(ids, p.ID+1)
		}
	}
	if len(ids) <= n {
		t.Fatalf("no %s page %d: %v", typ, n, ids)
	}
	return ids[len(ids)-1-n]
}

func overwritePage(t testing.TB, path string, id int) { boltpages.Overwrite(t, path, id, 2) }

func TestOpenRefusesADamagedStore(t *testing.T) {
	for name, damage := range map[string]func(t *testing.T, path string) string{
		"a leaf overwritten": func(t *testing.T, path string) string {
			overwritePage(t, path, pageOfType(t, path, "leaf", 2))
			return "holds something else"
		},
		"cut short": func(t *testing.T, path string) string {
			st, _ := os.Stat(path)
			if err := os.Truncate(path, int64(pageOfType(t, path, "leaf", 3)*os.Getpagesize())); err != nil || st == nil {
				t.Fatal(err)
			}
			return "cut short"
		},
		"a large record overwritten": func(t *testing.T, path string) string {
			overwritePage(t, path, pageOfType(t, path, "overflow", 0))
			return "does not decode"
		},
	} {
		t.Run(name, func(t *testing.T) {
			path, _ := storeWithRecords(t)
			want := damage(t, path)
			_, err := approvals.Open(path, nil)
			var damaged *approvals.DamagedError
			if !errors.As(err, &damaged) || !errors.Is(err, approvals.ErrDamaged) || damaged.Path != path ||
				!strings.Contains(damaged.Reason, want) {
				t.Fatalf("Open: %v, want a *DamagedError saying %q", err, want)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, path+" is damaged: ") || strings.Contains(msg, "\n") {
				t.Fatalf("message %q", msg)
			}
			t.Log(err)
		})
	}
}

// checkSalvaged opens the salvaged store and checks that every record in
// it is one that was written, as it was left or, found on a page the
// store's tree no longer reaches, as it was before its resolution; and
// that the report counts them.
func checkSalvaged(t testing.TB, path string, rep *approvals.SalvageReport, written map[string]approvals.Record) int {
	t.Helper()
	s, err := approvals.Open(path, nil)
	if err != nil {
		t.Fatalf("the salvaged store does not open: %v", err)
	}
	defer s.Close()
	records, err := s.List(nil)
	if err != nil {
		t.Fatal(err)
	}
	counted := 0
	for _, ss := range rep.Sessions {
		counted += ss.Saved
	}
	if counted != len(records) {
		t.Fatalf("%d records in the store, %d in the report", len(records), counted)
	}
	for _, r := range records {
		want, ok := written[r.Approval.SessionID+"/"+r.Approval.ID]
		got, _ := json.Marshal(r)
		orig, _ := json.Marshal(want)
		want.Resolution = nil
		older, _ := json.Marshal(want)
		if !ok || !bytes.Equal(got, orig) && !bytes.Equal(got, older) {
			t.Fatalf("a record that was not written: %s", got)
		}
	}
	return len(records)
}

// Whichever page is overwritten, Open refuses the store or reads it, and
// Salvage saves only records as they were written, into a store that
// opens; it never writes the damaged file.
func TestSalvageEveryPage(t *testing.T) {
	path, written := storeWithRecords(t)
	st, _ := os.Stat(path)
	pages := int(st.Size()) / os.Getpagesize()
	refused, lost := 0, 0
	for id := 2; id < pages; id++ {
		damaged := filepath.Join(t.TempDir(), "approvals.db")
		boltpages.Copy(t, path, damaged)
		overwritePage(t, damaged, id)
		s, err := approvals.Open(damaged, nil)
		if err == nil {
			s.Close()
			continue
		}
		var de *approvals.DamagedError
		if !errors.As(err, &de) {
			t.Fatalf("page %d: Open: %v", id, err)
		}
		refused++
		before, _ := os.ReadFile(damaged)
		out := filepath.Join(t.TempDir(), "salvaged.db")
		rep, err := approvals.Salvage(context.Background(), damaged, out)
		if err != nil {
			t.Fatalf("page %d: %v", id, err)
		}
		if after, _ := os.ReadFile(damaged); !bytes.Equal(before, after) {
			t.Fatalf("page %d: Salvage changed the damaged file", id)
		}
		if n := checkSalvaged(t, out, rep, written); n < len(written) {
			lost++
			if len(rep.Lost) == 0 && rep.Note == "" {
				t.Fatalf("page %d: %d of %d records saved, and no word of a loss", id, n, len(written))
			}
		}
	}
	if refused == 0 {
		t.Fatal("no page refused")
	}
	t.Logf("%d pages refused, %d salvages lost records", refused, lost)
}

// Records on a leaf that can no longer be reached are found still.
func TestSalvageFindsRecordsOutsideTheTree(t *testing.T) {
	path, written := storeWithRecords(t)
	overwritePage(t, path, pageOfType(t, path, "branch", 0)) // the way down to every leaf
	out := filepath.Join(t.TempDir(), "salvaged.db")
	rep, err := approvals.Salvage(context.Background(), path, out)
	if err != nil {
		t.Fatal(err)
	}
	n := checkSalvaged(t, out, rep, written)
	outside := 0
	for _, s := range rep.Sessions {
		outside += s.Outside
	}
	if n < len(written)*9/10 || outside == 0 {
		t.Fatalf("%d of %d records saved, %d outside the tree: %+v", n, len(written), outside, rep)
	}
	t.Logf("%d of %d records saved, %d of them outside the tree; lost: %v", n, len(written), outside, rep.Lost)
}

func TestSalvageRefusesAStoreInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.db")
	s := open(t, path, &clock{})
	_, err := approvals.Salvage(context.Background(), path, filepath.Join(t.TempDir(), "out.db"))
	if !errors.Is(err, boltfile.ErrInUse) {
		t.Fatalf("Salvage of a store in use: %v", err)
	}
	_ = s
}

// An empty file is not damaged: bbolt makes a new store of it.
func TestOpenEmptyFileIsANewStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, path, &clock{})
	if err := s.Add(approval("s1", "a1")); err != nil {
		t.Fatal(err)
	}
}
