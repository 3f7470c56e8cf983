package boltfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/boltpages"
	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The two ways the stores open their files: the event log does not write
// its freelist (bbolt rebuilds it by walking every tree at open), the
// approvals do.
var modes = map[string]*bolt.Options{
	"no-freelist-sync": {Timeout: time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType},
	"freelist-sync":    {Timeout: time.Second},
}

// build makes a bbolt file at path holding what fill puts in it.
func build(t testing.TB, path string, opts *bolt.Options, fill func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fill); err != nil {
		t.Fatal(err)
	}
}

// fillMixed puts in every kind of thing a tree holds: a bucket of many
// keys (branch pages), inline buckets, nested buckets, values spanning
// overflow pages, and free pages (a deleted bucket).
func fillMixed(tx *bolt.Tx) error {
	big, err := tx.CreateBucket([]byte("big"))
	if err != nil {
		return err
	}
	for i := range 2000 {
		if err := big.Put(key(i), bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
			return err
		}
	}
	nested, err := tx.CreateBucket([]byte("nested"))
	if err != nil {
		return err
	}
	for i := range 50 {
		b, err := nested.CreateBucket(key(i))
		if err != nil {
			return err
		}
		for j := range i { // the small ones stay inline
			if err := b.Put(key(j), []byte("v")); err != nil {
				return err
			}
		}
	}
	if err := nested.Put([]byte("huge"), bytes.Repeat([]byte("h"), 50_000)); err != nil {
		return err
	}
	gone, err := tx.CreateBucket([]byte("gone"))
	if err != nil {
		return err
	}
	for i := range 300 {
		if err := gone.Put(key(i), make([]byte, 200)); err != nil {
			return err
		}
	}
	return nil
}

func key(i int) []byte { return fmt.Appendf(nil, "key-%06d", i) }

// mixed builds a fillMixed file, whose "gone" bucket a second transaction
// deletes, leaving free pages.
func mixed(t testing.TB, opts *bolt.Options) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mixed.db")
	build(t, path, opts, fillMixed)
	build(t, path, opts, func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("gone")) })
	return path
}

// pageTypes lists the type of every page of the file, as bbolt sees it.
func pageTypes(t testing.TB, path string) []string {
	t.Helper()
	var types []string
	for _, p := range boltpages.List(t, path) {
		types = append(types, p.Type)
		for range p.Overflow {
			types = append(types, "overflow")
		}
	}
	return types
}

// overwrite puts garbage over page id of the file.
func overwrite(t testing.TB, path string, id int) { boltpages.Overwrite(t, path, id, 7) }

// readAll opens the file with bbolt as a store does and reads every key
// and value of every bucket: what a store that trusted Check would do.
func readAll(t testing.TB, path string, opts *bolt.Options) int {
	t.Helper()
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		t.Fatalf("bbolt refuses a file Check accepted: %v", err)
	}
	defer db.Close()
	n := 0
	var walk func(b *bolt.Bucket) error
	walk = func(b *bolt.Bucket) error {
		if b == nil { // a value where a bucket was expected: the stores' business
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			n++
			if v == nil {
				return walk(b.Bucket(k))
			}
			return nil
		})
	}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walk(b) })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCheckAcceptsHealthyFiles(t *testing.T) {
	for name, opts := range modes {
		t.Run(name, func(t *testing.T) {
			path := mixed(t, opts)
			if err := Check(path); err != nil {
				t.Fatal(err)
			}
			if n := readAll(t, path, opts); n < 2000 {
				t.Fatalf("read %d keys", n)
			}
			fresh := filepath.Join(t.TempDir(), "fresh.db")
			build(t, fresh, opts, func(*bolt.Tx) error { return nil })
			if err := Check(fresh); err != nil {
				t.Fatalf("a new file: %v", err)
			}
		})
	}
	empty := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Check(empty); err != nil {
		t.Fatalf("an empty file (bbolt makes it a new one): %v", err)
	}
}

// Garbage over any page of a tree is found; over a free page it is
// harmless, and bbolt reads the file without a panic.
func TestCheckFindsEveryOverwrittenPage(t *testing.T) {
	for name, opts := range modes {
		t.Run(name, func(t *testing.T) {
			path := mixed(t, opts)
			types := pageTypes(t, path)
			tried := map[string]int{}
			for id, typ := range types[2:] {
				id += 2
				damagedPath := filepath.Join(t.TempDir(), "damaged.db")
				boltpages.Copy(t, path, damagedPath)
				overwrite(t, damagedPath, id)
				err := Check(damagedPath)
				tried[typ]++
				var de *DamagedError
				switch {
				case typ == "free" || typ == "overflow" && err == nil:
					// A value's bytes, or nothing: bbolt must cope.
					if err != nil {
						t.Fatalf("page %d (%s): %v", id, typ, err)
					}
					readAll(t, damagedPath, opts)
				case !errors.As(err, &de) || !errors.Is(err, ErrDamaged) || de.Path != damagedPath:
					t.Fatalf("page %d (%s): %v, want a *DamagedError", id, typ, err)
				}
			}
			for _, typ := range []string{"branch", "leaf", "free", "overflow"} {
				if tried[typ] == 0 {
					t.Errorf("no %s page in the file: %v", typ, tried)
				}
			}
			if name == "freelist-sync" && tried["freelist"] == 0 {
				t.Errorf("no freelist page: %v", tried)
			}
		})
	}
}

func TestCheckReasons(t *testing.T) {
	opts := modes["no-freelist-sync"]
	path := mixed(t, opts)
	size := fileSize(t, path)
	for name, c := range map[string]struct {
		damage func(path string)
		want   string
	}{
		"cut in the middle":  {func(p string) { truncate(t, p, size/2) }, "it is cut short, at "},
		"cut to a page":      {func(p string) { truncate(t, p, 4096) }, "shorter than its two meta pages"},
		"cut to a few bytes": {func(p string) { truncate(t, p, 40) }, "too short for a bbolt file"},
		"not a bbolt file": {func(p string) {
			if err := os.WriteFile(p, bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "it is not a bbolt file"},
		"both meta pages": {func(p string) { overwrite(t, p, 0); overwrite(t, p, 1) }, ""},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "events.db")
			boltpages.Copy(t, path, p)
			c.damage(p)
			err := Check(p)
			var de *DamagedError
			if !errors.As(err, &de) || !strings.Contains(de.Reason, c.want) {
				t.Fatalf("%v, want a reason with %q", err, c.want)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, p+" is damaged: ") || strings.Count(msg, "\n") > 0 {
				t.Fatalf("message %q", msg)
			}
			t.Log(err)
		})
	}
}

// A torn meta page is what a crash leaves: bbolt uses the other one, and
// so does Check.
func TestCheckOneMetaPageIsEnough(t *testing.T) {
	for _, id := range []int{0, 1} {
		p := mixed(t, modes["freelist-sync"])
		overwrite(t, p, id)
		if err := Check(p); err != nil {
			t.Fatalf("meta page %d overwritten: %v", id, err)
		}
		readAll(t, p, modes["freelist-sync"])
	}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func truncate(t testing.TB, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// A file cut while the check reads it through its mapping faults; the
// check reports it instead of the process dying of SIGBUS.
func TestCheckSurvivesAFileCutWhileMapped(t *testing.T) {
	path := mixed(t, modes["no-freelist-sync"])
	size := fileSize(t, path)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	truncate(t, path, 2*int64(os.Getpagesize())) // the meta pages only
	err = checkMapped(m, size)
	if err == nil || !strings.Contains(err.Error(), "cut short while it was read") {
		t.Fatalf("check of a mapping past the file's end: %v", err)
	}
	t.Log(err)
}
