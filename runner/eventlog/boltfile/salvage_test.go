package boltfile

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// walkBig opens a file for salvage and returns the keys of its "big"
// bucket, with the faults of the walk.
func walkBig(t testing.TB, path string) (map[string]bool, []Fault) {
	t.Helper()
	f, osf, err := OpenPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer osf.Close()
	var big *Bucket
	faults, err := f.Root().Walk(func(e Entry) error {
		if string(e.Key) == "big" {
			big = e.Bucket
		}
		return nil
	})
	if err != nil || len(faults) > 0 || big == nil {
		t.Fatalf("root: %v, faults %v, big %v", err, faults, big)
	}
	keys := map[string]bool{}
	faults, err = big.Walk(func(e Entry) error {
		if !bytes.Equal(e.Value, bytes.Repeat(e.Value[:1], 100)) {
			return fmt.Errorf("key %s: value %q", e.Key, e.Value)
		}
		keys[string(e.Key)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys, faults
}

// covered reports whether a fault's range holds k.
func covered(faults []Fault, k []byte) bool {
	for _, f := range faults {
		if (f.From == nil || bytes.Compare(f.From, k) <= 0) && (f.To == nil || bytes.Compare(k, f.To) < 0) {
			return true
		}
	}
	return false
}

// An overwritten leaf costs the keys it held, and the fault says which;
// every other key is read.
func TestWalkPassesOverAnOverwrittenPage(t *testing.T) {
	for name, opts := range modes {
		t.Run(name, func(t *testing.T) {
			path := mixed(t, opts)
			types := pageTypes(t, path)
			// A leaf of "big": its keys are the only ones read at the
			// beginning of the file's leaves with 100-byte values.
			var damaged int
			for id, typ := range types {
				if typ == "leaf" && id > 10 {
					damaged = id
					break
				}
			}
			before, faults := walkBig(t, path)
			if len(before) != 2000 || len(faults) > 0 {
				t.Fatalf("healthy file: %d keys, faults %v", len(before), faults)
			}
			overwrite(t, path, damaged)
			after, faults := walkBig(t, path)
			if len(faults) == 0 {
				t.Skipf("page %d is not one of big's", damaged)
			}
			lost := 0
			for i := range 2000 {
				k := key(i)
				if !after[string(k)] {
					lost++
					if !covered(faults, k) {
						t.Errorf("%s lost outside every fault %v", k, faults)
					}
				}
			}
			if lost == 0 || lost > 100 {
				t.Fatalf("lost %d keys with page %d", lost, damaged)
			}
			t.Logf("page %d: lost %d keys; %v", damaged, lost, faults[0].Reason)
		})
	}
}

// A file cut short keeps what its remaining pages hold: here the root of
// "big" is past the cut, and Unreached finds its leaves.
func TestWalkReadsWhatACutFileKeeps(t *testing.T) {
	path := mixed(t, modes["no-freelist-sync"])
	cut := nthLeaf(t, path, 30)
	truncate(t, path, int64(cut*os.Getpagesize()))
	if err := Check(path); err == nil {
		t.Fatal("Check accepts a file cut short")
	}
	f, osf, err := OpenPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer osf.Close()
	keys := map[string]bool{}
	faults, err := f.Root().Walk(func(e Entry) error {
		if e.Bucket == nil {
			return nil
		}
		_, err := e.Bucket.Walk(func(e Entry) error {
			keys[string(e.Key)] = true
			return nil
		})
		return err
	})
	if err != nil || len(faults) > 0 {
		t.Fatalf("root: %v %v", err, faults)
	}
	orphans := 0
	err = f.Unreached(func(b *Bucket) error {
		orphans++
		_, err := b.Walk(func(e Entry) error {
			if len(e.Value) == 100 {
				keys[string(e.Key)] = true
			}
			return nil
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range 2000 {
		if keys[string(key(i))] {
			n++
		}
	}
	// The first 30 leaves hold about 16 keys each.
	if n < 25*16 || n == 2000 {
		t.Fatalf("%d of 2000 keys read, %d orphan leaves", n, orphans)
	}
	t.Logf("%d of 2000 keys read; %d orphan leaves", n, orphans)
}

// Salvage never writes the file.
func TestSalvageLeavesTheFileAlone(t *testing.T) {
	path := mixed(t, modes["no-freelist-sync"])
	overwrite(t, path, nthLeaf(t, path, 10))
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	walkBig(t, path)
	if err := Check(path); err == nil {
		t.Fatal("the damage went unnoticed")
	}
	now, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(path)
	if !bytes.Equal(orig, now) || !st.ModTime().Equal(st2.ModTime()) {
		t.Fatal("the file changed")
	}
}

// nthLeaf is the id of the file's nth leaf page.
func nthLeaf(t testing.TB, path string, n int) int {
	t.Helper()
	for id, typ := range pageTypes(t, path) {
		if typ == "leaf" {
			if n--; n < 0 {
				return id
			}
		}
	}
	t.Fatalf("fewer than %d leaves", n)
	return 0
}
