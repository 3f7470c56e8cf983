package boltfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// smallFile builds a file of 1 KiB pages holding a little of everything
// (see fillSmall), as the fuzz seeds.
func smallFile(f *testing.F, opts bolt.Options) []byte {
	f.Helper()
	opts.PageSize = 1024
	path := filepath.Join(f.TempDir(), "seed.db")
	build(f, path, &opts, fillSmall)
	build(f, path, &opts, func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Delete(key(3)) })
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	// Without the room bbolt grows the file by: a small input mutates
	// faster.
	h, err := readHeader(mapping(data), int64(len(data)))
	if err != nil {
		f.Fatal(err)
	}
	return data[:h.meta.pgid*h.pageSize]
}

// fillSmall: a bucket over a few pages (a branch), an inline bucket, a
// nested bucket and a value on overflow pages.
func fillSmall(tx *bolt.Tx) error {
	b, err := tx.CreateBucket([]byte("b"))
	if err != nil {
		return err
	}
	for i := range 40 {
		if err := b.Put(key(i), bytes.Repeat([]byte{byte(i)}, 60)); err != nil {
			return err
		}
	}
	in, err := b.CreateBucket([]byte("inline"))
	if err != nil {
		return err
	}
	if err := in.Put([]byte("k"), []byte("v")); err != nil {
		return err
	}
	n, err := tx.CreateBucket([]byte("n"))
	if err != nil {
		return err
	}
	deep, err := n.CreateBucket([]byte("deep"))
	if err != nil {
		return err
	}
	return deep.Put([]byte("big"), bytes.Repeat([]byte("x"), 3000))
}

// FuzzCheck feeds Check any file: it never panics, and bbolt opens and
// reads every file Check accepts without a panic, as both stores open
// their files. Salvage (Open, Walk, Unreached) never panics either.
func FuzzCheck(f *testing.F) {
	for _, opts := range []bolt.Options{{NoFreelistSync: true, FreelistType: bolt.FreelistMapType}, {}} {
		data := smallFile(f, opts)
		f.Add(data)
		for _, page := range []int{2, 5, 9} { // damaged seeds: a page zeroed
			d := bytes.Clone(data)
			clear(d[page*1024 : page*1024+64])
			f.Add(d)
		}
		f.Add(data[:len(data)/2])
	}
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte("not a database "), 300))
	f.Fuzz(func(t *testing.T, data []byte) {
		salvageAll(t, data)
		if err := check(reader{bytes.NewReader(data), uint64(len(data))}, int64(len(data))); err != nil || len(data) == 0 {
			return
		}
		for name, opts := range modes {
			path := filepath.Join(t.TempDir(), name+".db")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			o := *opts
			o.Timeout, o.NoSync = time.Second, true // no fsync: more inputs a second
			readAll(t, path, &o)
		}
	})
}

// salvageAll reads what salvage can of data: buckets to a few levels, and
// a few thousand entries at most (a damaged file may nest a bucket in
// itself, many times over).
var errBudget = errors.New("enough")

func salvageAll(t *testing.T, data []byte) {
	sf, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return
	}
	budget := 5000
	var walk func(b *Bucket, depth int)
	walk = func(b *Bucket, depth int) {
		_, err := b.Walk(func(e Entry) error {
			if budget--; budget < 0 {
				return errBudget
			}
			if e.Bucket != nil && depth < 4 {
				walk(e.Bucket, depth+1)
			}
			return nil
		})
		if err != nil && !errors.Is(err, errBudget) {
			t.Fatal(err)
		}
	}
	walk(sf.Root(), 0)
	if err := sf.Unreached(func(b *Bucket) error { walk(b, 2); return nil }); err != nil {
		t.Fatal(err)
	}
}
