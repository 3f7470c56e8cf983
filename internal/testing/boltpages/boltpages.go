// Package boltpages owns what tests of bbolt files (the event log's and
// the approvals') share: a file's pages as bbolt sees them, copies of a
// file, and damage done to a page on purpose.
package boltpages

import (
	"math/rand/v2"
	"os"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Page is one page of a bbolt file: its id, its type as bbolt names it
// (meta, freelist, branch, leaf) and how many overflow pages follow it.
type Page struct {
	ID       int
	Type     string
	Overflow int
}

// List lists the file's pages in order, each with its overflow; the ids
// an overflow covers are not listed of their own.
func List(t testing.TB, path string) []Page {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pages []Page
	err = db.View(func(tx *bolt.Tx) error {
		for id := 0; ; id++ {
			info, err := tx.Page(id)
			if err != nil || info == nil {
				return err
			}
			pages = append(pages, Page{ID: id, Type: info.Type, Overflow: info.OverflowCount})
			id += info.OverflowCount
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// Overwrite puts garbage over page id of the file: the same garbage for
// the same id and stream.
func Overwrite(t testing.TB, path string, id int, stream uint64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	garbage := make([]byte, os.Getpagesize())
	r := rand.New(rand.NewPCG(uint64(id), stream))
	for i := range garbage {
		garbage[i] = byte(r.Uint32())
	}
	if _, err := f.WriteAt(garbage, int64(id*len(garbage))); err != nil {
		t.Fatal(err)
	}
}

// Copy copies a file.
func Copy(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
