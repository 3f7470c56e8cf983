package boltfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	berrors "go.etcd.io/bbolt/errors"
)

// File is a bbolt file opened to salvage what can be read of it: read with
// ReadAt and never written, every page checked before it is used, a page
// that cannot be read passed over. Its methods are not safe for concurrent
// use.
type File struct {
	ps   *pages
	root uint64
	// reached has a bit for each page a walk read (see Unreached).
	reached []uint64
	// previous is the root of the tree as the transaction before left it,
	// 0 when there is none to read, or it is the one in use.
	previous uint64
	// Note says what Open had to pass over to find a root, "" when
	// nothing.
	Note string
}

// Open opens a damaged file for salvage. It uses the meta page bbolt would
// use, or the other one when that one's root page cannot be read; when
// neither can, the walk of Root reports it, and Unreached still finds what
// the file holds. A file cut short keeps the pages it still has. Open
// fails only when neither meta page is valid.
func Open(r io.ReaderAt, size int64) (*File, error) {
	src := reader{r, uint64(max(size, 0))}
	h, err := readHeader(src, size)
	if err != nil {
		return nil, err
	}
	hwm := h.meta.pgid
	if h.older != nil {
		hwm = max(hwm, h.older.pgid)
	}
	// Pages past the end of a file cut short cannot be read anyway: they
	// take no room here.
	hwm = min(hwm, uint64(max(size, 0))/h.pageSize+1)
	ps := &pages{src: src, pageSize: h.pageSize, hwm: hwm}
	f := &File{ps: ps, root: h.meta.root, reached: make([]uint64, (hwm+63)/64)}
	f.reached[0] |= 3
	older := h.older != nil && h.older.pageSize == h.meta.pageSize && readable(ps, h.older.root)
	_, rootErr := ps.read(h.meta.root)
	switch {
	case rootErr == nil:
		if older {
			f.previous = h.older.root
		}
	case older:
		f.root = h.older.root
		f.Note = fmt.Sprintf("its newest root is unusable (%v), so this is the file as its previous transaction left it", rootErr)
	default:
		f.Note = fmt.Sprintf("its root page is unusable (%v): nothing can be found through it", rootErr)
	}
	return f, nil
}

func readable(ps *pages, id uint64) bool {
	_, err := ps.read(id)
	return err == nil
}

// OpenPath opens the file at path for salvage (see Open), read-only and
// under a shared lock, so that a running store, which holds it for
// writing, is never read from outside: that fails with ErrInUse. Close
// the returned file when done.
func OpenPath(path string) (*File, *os.File, error) {
	osf, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if err := lock(osf, syscall.LOCK_SH, -1); err != nil {
		_ = osf.Close()
		if errors.Is(err, berrors.ErrTimeout) {
			err = fmt.Errorf("%w: %s", ErrInUse, path)
		}
		return nil, nil, err
	}
	st, err := osf.Stat()
	if err != nil {
		_ = osf.Close()
		return nil, nil, err
	}
	f, err := Open(osf, st.Size())
	if err != nil {
		_ = osf.Close()
		return nil, nil, &DamagedError{Path: path, Reason: err.Error()}
	}
	return f, osf, nil
}

// OpenSalvage opens src for a salvage into dst (see OpenPath), which must
// not exist yet. A file too damaged to read at all is no error: f is nil
// and unusable says why, for the salvage's report. Close osf when done
// (it is nil when f is).
func OpenSalvage(src, dst string) (f *File, osf *os.File, unusable string, err error) {
	if _, err := os.Lstat(dst); err == nil {
		return nil, nil, "", fmt.Errorf("salvage into %s: %w", dst, os.ErrExist)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, "", fmt.Errorf("salvage: %w", err)
	}
	f, osf, err = OpenPath(src)
	var damaged *DamagedError
	switch {
	case errors.As(err, &damaged):
		return nil, nil, damaged.Reason, nil
	case err != nil:
		return nil, nil, "", fmt.Errorf("salvage %s: %w", src, err)
	}
	return f, osf, "", nil
}

// Root is the file's root bucket, which holds its top-level buckets.
func (f *File) Root() *Bucket { return &Bucket{f: f, ref: bucketRef{root: f.root}} }

// Previous is the root bucket as the file's transaction before the last
// one left it, nil when there is none to read. bbolt writes a transaction
// into pages the one before did not use, and reuses those it frees only
// in a later one, so that tree is whole but for damage from outside:
// what the last transaction's pages held, lost, is there as it was one
// transaction earlier.
func (f *File) Previous() *Bucket {
	if f.previous == 0 {
		return nil
	}
	return &Bucket{f: f, ref: bucketRef{root: f.previous}}
}

// Bucket is a bucket of a File.
type Bucket struct {
	f   *File
	ref bucketRef
}

// Sequence is the bucket's sequence, as its parent holds it.
func (b *Bucket) Sequence() uint64 { return b.ref.sequence }

// Entry is one key of a bucket: a value, or a bucket of its own.
type Entry struct {
	Key    []byte
	Value  []byte  // nil when the key names a bucket
	Bucket *Bucket // the bucket the key names, else nil
}

// Fault is a part of a bucket that could not be read: the keys from From
// up to (not including) To were there, and are lost, or some of them. A
// nil From is the bucket's start, a nil To its end.
type Fault struct {
	From, To []byte
	Reason   string
}

// Walk calls fn with every entry of the bucket it can read, in order, and
// returns the parts it could not read. An unreadable page costs the keys
// it held, no more: its siblings are still read. Keys and values remain
// valid after fn returns. An error of fn stops the walk and is returned.
func (b *Bucket) Walk(fn func(Entry) error) ([]Fault, error) {
	w := &walker{f: b.f, fn: fn, visited: map[uint64]bool{}}
	var err error
	if b.ref.inline != nil {
		err = w.leaf(b.ref.inline, nil, nil)
	} else {
		err = w.page(b.ref.root, nil, nil)
	}
	return w.faults, err
}

// Unreached calls fn with each leaf page of the file that no walk has
// read yet, as a bucket of that one page, in the order of the file. These
// are pages of a tree whose way down was lost with a damaged page, and
// free pages, which hold what older transactions wrote; and bbolt reuses
// a free page for anything, so a reference found on one may lead anywhere.
// Take from them only values that say themselves what they are. Pages
// fn's walks read are not offered again.
func (f *File) Unreached(fn func(*Bucket) error) error {
	for id := uint64(2); id < f.ps.hwm; id++ {
		if f.isReached(id) {
			continue
		}
		p, err := f.ps.read(id)
		if err != nil || p.flags != leafFlag || p.elems() != nil {
			continue
		}
		if err := fn(&Bucket{f: f, ref: bucketRef{root: id}}); err != nil {
			return err
		}
		id += uint64(p.overflow)
	}
	return nil
}

func (f *File) isReached(id uint64) bool {
	return id < f.ps.hwm && f.reached[id/64]&(1<<(id%64)) != 0
}

type walker struct {
	f       *File
	fn      func(Entry) error
	faults  []Fault
	visited map[uint64]bool // pages of this walk: a loop in a damaged tree ends
}

func (w *walker) fault(from, to []byte, reason string) {
	w.faults = append(w.faults, Fault{From: from, To: to, Reason: reason})
}

// page walks the tree of page id, whose keys are from..to.
func (w *walker) page(id uint64, from, to []byte) error {
	p, err := w.f.ps.read(id)
	if err != nil {
		w.fault(from, to, err.Error())
		return nil
	}
	if w.mark(p) {
		w.fault(from, to, fmt.Sprintf("page %d is reached twice", id))
		return nil
	}
	if err := p.elems(); err != nil {
		w.fault(from, to, err.Error())
		return nil
	}
	if p.flags == leafFlag {
		return w.leaf(p, from, to)
	}
	es := readElems(p)
	for i, e := range es.e {
		lo, hi := es.bounds(i, from, to)
		if es.bad[i] != nil {
			w.fault(lo, hi, es.bad[i].Error())
			continue
		}
		// A child's keys run from its element's key to the next one's.
		if err := w.page(e.child, e.key, hi); err != nil {
			return err
		}
	}
	return nil
}

// elems are a page's elements, with what keeps each from being read.
type elems struct {
	e   []elem
	bad []error
	// lo and hi: the key of the last readable element before each one,
	// and of the next readable one after it (nil: none).
	lo, hi [][]byte
}

func readElems(p *page) elems {
	es := elems{e: make([]elem, p.count), bad: make([]error, p.count), lo: make([][]byte, p.count), hi: make([][]byte, p.count)}
	for i := range p.count {
		es.e[i], es.bad[i] = p.elem(i)
	}
	var last []byte
	for i := range p.count {
		es.lo[i] = last
		if es.bad[i] == nil {
			last = es.e[i].key
		}
	}
	last = nil
	for i := p.count - 1; i >= 0; i-- {
		es.hi[i] = last
		if es.bad[i] == nil {
			last = es.e[i].key
		}
	}
	return es
}

// bounds are the keys around element i: the last readable one before it
// (else from) and the next readable one after it (else to).
func (es elems) bounds(i int, from, to []byte) (lo, hi []byte) {
	lo, hi = es.lo[i], es.hi[i]
	if lo == nil {
		lo = from
	}
	if hi == nil {
		hi = to
	}
	return lo, hi
}

// mark records that p and its overflow pages were reached, and reports
// whether this walk had reached one of them already.
func (w *walker) mark(p *page) bool {
	again := false
	for id := p.id; id <= p.id+uint64(p.overflow); id++ {
		again = again || w.visited[id]
		w.visited[id] = true
		w.f.reached[id/64] |= 1 << (id % 64)
	}
	return again
}

// leaf hands the entries of a leaf page (keys from..to) to fn. An
// element that cannot be read is a fault between its neighbours' keys.
func (w *walker) leaf(p *page, from, to []byte) error {
	es := readElems(p)
	for i, e := range es.e {
		if es.bad[i] != nil {
			lo, hi := es.bounds(i, from, to)
			w.fault(lo, hi, es.bad[i].Error())
			continue
		}
		ent, err := w.entry(p, e)
		if err != nil {
			_, hi := es.bounds(i, from, to)
			w.fault(e.key, hi, err.Error())
			continue
		}
		if err := w.fn(ent); err != nil {
			return err
		}
	}
	return nil
}

// entry reads a leaf element's value, or the bucket it names.
func (w *walker) entry(p *page, e elem) (Entry, error) {
	v, err := p.value(e)
	if err != nil {
		return Entry{}, err
	}
	if !e.isBucket() {
		return Entry{Key: e.key, Value: v}, nil
	}
	ref, err := parseBucket(v)
	if err != nil {
		return Entry{}, fmt.Errorf("%s holds %w", p.name(), err)
	}
	if ref.inline != nil {
		if err := ref.inline.elems(); err != nil {
			return Entry{}, err
		}
	}
	return Entry{Key: e.key, Bucket: &Bucket{f: w.f, ref: ref}}, nil
}
