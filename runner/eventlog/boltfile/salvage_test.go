package boltfile

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
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
			leaves := slices.Sorted(maps.Keys(leavesOf(t, path, "big")))
			damaged := int(leaves[len(leaves)/2])
			before, faults := walkBig(t, path)
			if len(before) != 2000 || len(faults) > 0 {
				t.Fatalf("healthy file: %d keys, faults %v", len(before), faults)
			}
			overwrite(t, path, damaged)
			after, faults := walkBig(t, path)
			if len(faults) == 0 {
				t.Fatalf("page %d lost, and no fault", damaged)
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

// A file cut short keeps what its remaining pages hold: cut in the middle
// of "big"'s leaves, it keeps the keys of those before the cut, through
// its tree or, when the way down is past the cut, with Unreached.
func TestWalkReadsWhatACutFileKeeps(t *testing.T) {
	path := mixed(t, modes["no-freelist-sync"])
	leaves := leavesOf(t, path, "big") // where bbolt put them differs from run to run
	ids := slices.Sorted(maps.Keys(leaves))
	cut := ids[len(ids)/2]
	kept := 0
	for _, id := range ids[:len(ids)/2] {
		kept += leaves[id]
	}
	truncate(t, path, int64(cut)*int64(os.Getpagesize()))
	if err := Check(path); err == nil {
		t.Fatal("Check accepts a file cut short")
	}
	f, osf, err := OpenPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer osf.Close()
	keys := map[string]bool{}
	bigKey := func(e Entry) error {
		if bytes.HasPrefix(e.Key, []byte("key-")) && len(e.Value) == 100 && bytes.Equal(e.Value, bytes.Repeat(e.Value[:1], 100)) {
			keys[string(e.Key)] = true
		}
		return nil
	}
	_, err = f.Root().Walk(func(e Entry) error {
		if e.Bucket != nil {
			_, err := e.Bucket.Walk(bigKey)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = f.Unreached(func(b *Bucket) error {
		_, err := b.Walk(bigKey)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < kept || len(keys) == 2000 {
		t.Fatalf("%d of 2000 keys read; the %d leaves before the cut hold %d", len(keys), len(ids)/2, kept)
	}
	t.Logf("%d of 2000 keys read; the %d leaves before the cut hold %d", len(keys), len(ids)/2, kept)
}

// leavesOf maps the leaf pages of a top-level bucket of a healthy file to
// the keys each holds.
func leavesOf(t testing.TB, path, bucket string) map[uint64]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := readCheckedHeader(mapping(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	ps := &pages{src: mapping(data), pageSize: h.pageSize, hwm: h.meta.pgid}
	leaves := map[uint64]int{}
	var walk func(id uint64)
	walk = func(id uint64) {
		p, err := ps.read(id)
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.count {
			e, err := p.elem(i)
			if err != nil {
				t.Fatal(err)
			}
			if p.flags == branchFlag {
				walk(e.child)
			}
		}
		if p.flags == leafFlag {
			leaves[id] = p.count
		}
	}
	root, err := ps.read(h.meta.root)
	if err != nil {
		t.Fatal(err)
	}
	for i := range root.count {
		e, _ := root.elem(i)
		if string(e.key) == bucket {
			v, _ := root.value(e)
			ref, err := parseBucket(v)
			if err != nil || ref.root == 0 {
				t.Fatalf("bucket %s: %+v %v", bucket, ref, err)
			}
			walk(ref.root)
		}
	}
	if len(leaves) < 4 {
		t.Fatalf("bucket %s has %d leaves", bucket, len(leaves))
	}
	return leaves
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
