package boltfile

import (
	"errors"
	"fmt"
	"io"
)

// source is a file's bytes: a read-only mapping of it (the check's: no
// copies) or a reader (salvage's: a read that fails is an error, never a
// fault).
type source interface {
	io.ReaderAt
	// span returns the n bytes at off.
	span(off, n uint64) ([]byte, error)
}

// mapping is a file mapped read-only.
type mapping []byte

func (m mapping) span(off, n uint64) ([]byte, error) {
	if end := off + n; end < off || end > uint64(len(m)) {
		return nil, io.ErrUnexpectedEOF
	}
	return m[off : off+n : off+n], nil
}

func (m mapping) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 || off >= int64(len(m)) {
		return 0, io.EOF
	}
	n := copy(b, m[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// reader reads a file of size bytes.
type reader struct {
	io.ReaderAt
	size uint64
}

func (r reader) span(off, n uint64) ([]byte, error) {
	if end := off + n; end < off || end > r.size {
		return nil, io.ErrUnexpectedEOF
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, int64(off)); err != nil {
		return nil, err
	}
	return b, nil
}

// pages reads the pages of a file, checking every reference against the
// file before following it.
type pages struct {
	src      source
	pageSize uint64
	hwm      uint64 // pages [0, hwm) are the file's (the meta's count)
}

// page is one page, with its overflow pages (its span), or an inline
// bucket's page inside a value.
type page struct {
	id       uint64
	flags    uint16
	count    int
	overflow uint32
	buf      []byte // the span, header included
	inline   bool
}

// read reads page id and checks its header: it must say it is page id,
// and it and its overflow must be in the file.
func (ps *pages) read(id uint64) (*page, error) {
	if id < 2 || id >= ps.hwm {
		return nil, fmt.Errorf("it refers to page %d, which is not one of its pages (2 to %d)", id, ps.hwm-1)
	}
	b, err := ps.src.span(id*ps.pageSize, ps.pageSize)
	if err != nil {
		return nil, fmt.Errorf("page %d cannot be read (%v)", id, err)
	}
	p := parseHeader(b)
	if p.id != id {
		return nil, fmt.Errorf("page %d holds something else (it says it is page %d)", id, p.id)
	}
	if uint64(p.overflow) >= ps.hwm-id {
		return nil, fmt.Errorf("page %d runs %d pages past the file's last page", id, uint64(p.overflow)-(ps.hwm-id)+1)
	}
	if p.overflow > 0 {
		if p.buf, err = ps.src.span(id*ps.pageSize, (uint64(p.overflow)+1)*ps.pageSize); err != nil {
			return nil, fmt.Errorf("page %d and its %d overflow pages cannot be read (%v)", id, p.overflow, err)
		}
	}
	return p, nil
}

func parseHeader(b []byte) *page {
	return &page{
		id:       order.Uint64(b[0:]),
		flags:    order.Uint16(b[8:]),
		count:    int(order.Uint16(b[10:])),
		overflow: order.Uint32(b[12:]),
		buf:      b,
	}
}

// inlinePage is the page of an inline bucket: the bytes of its value after
// the bucket header.
func inlinePage(b []byte) (*page, error) {
	if len(b) < pageHeaderSize {
		return nil, fmt.Errorf("an inline bucket of %d bytes, shorter than a page header", len(b))
	}
	p := parseHeader(b)
	p.inline = true
	return p, nil
}

var errOutside = errors.New("outside its page")

// bytes returns the n bytes of the page from off.
func (p *page) bytes(off, n uint64) ([]byte, error) {
	if end := off + n; end < off || end > uint64(len(p.buf)) {
		return nil, errOutside
	}
	return p.buf[off : off+n : off+n], nil
}

// name is how a reason names the page.
func (p *page) name() string {
	if p.inline {
		return "an inline bucket's page"
	}
	return fmt.Sprintf("page %d", p.id)
}

// elem is one element of a branch or leaf page.
type elem struct {
	key   []byte
	child uint64 // a branch element's page
	flags uint32 // a leaf element's flags
	voff  uint64 // where a leaf element's value is in the page
	vsize uint64
}

func (e elem) isBucket() bool { return e.flags&bucketLeafFlag != 0 }

// elems checks that the page's element table is in the page and that the
// page is a branch or a leaf.
func (p *page) elems() error {
	if p.flags != branchFlag && p.flags != leafFlag {
		return fmt.Errorf("%s is neither a branch nor a leaf of a tree (flags %#x)", p.name(), p.flags)
	}
	if p.flags == branchFlag && p.count == 0 {
		return fmt.Errorf("%s is an empty branch", p.name())
	}
	if _, err := p.bytes(pageHeaderSize, uint64(p.count)*elemSize); err != nil {
		return fmt.Errorf("the %d elements of %s do not fit in it", p.count, p.name())
	}
	return nil
}

// elem returns element i (< count) of a page elems accepted, its key read
// and its value's place checked.
func (p *page) elem(i int) (elem, error) {
	at := uint64(pageHeaderSize + i*elemSize)
	h, err := p.bytes(at, elemSize)
	if err != nil {
		return elem{}, err
	}
	var e elem
	var pos, ksize uint64
	if p.flags == branchFlag {
		pos, ksize, e.child = uint64(order.Uint32(h[0:])), uint64(order.Uint32(h[4:])), order.Uint64(h[8:])
	} else {
		e.flags = order.Uint32(h[0:])
		pos, ksize, e.vsize = uint64(order.Uint32(h[4:])), uint64(order.Uint32(h[8:])), uint64(order.Uint32(h[12:]))
	}
	if ksize == 0 {
		return elem{}, fmt.Errorf("element %d of %s has an empty key", i, p.name())
	}
	if e.key, err = p.bytes(at+pos, ksize); err != nil {
		return elem{}, fmt.Errorf("the key of element %d of %s is %w", i, p.name(), err)
	}
	e.voff = at + pos + ksize
	if e.voff+e.vsize > uint64(len(p.buf)) {
		return elem{}, fmt.Errorf("the value of element %d of %s is %w", i, p.name(), errOutside)
	}
	return e, nil
}

// value returns a leaf element's value.
func (p *page) value(e elem) ([]byte, error) {
	v, err := p.bytes(e.voff, e.vsize)
	if err != nil {
		return nil, fmt.Errorf("a value of %s is %w", p.name(), err)
	}
	return v, nil
}

// bucketRef is a bucket as its parent holds it: a root page, or an inline
// page inside the value.
type bucketRef struct {
	root     uint64
	sequence uint64
	inline   *page
}

func parseBucket(v []byte) (bucketRef, error) {
	if len(v) < bucketHeaderSize {
		return bucketRef{}, fmt.Errorf("a bucket of %d bytes, shorter than a bucket header", len(v))
	}
	b := bucketRef{root: order.Uint64(v), sequence: order.Uint64(v[8:])}
	if b.root != 0 {
		return b, nil
	}
	var err error
	if b.inline, err = inlinePage(v[bucketHeaderSize:]); err != nil {
		return bucketRef{}, err
	}
	if b.inline.flags != leafFlag {
		return bucketRef{}, fmt.Errorf("an inline bucket whose page is not a leaf (flags %#x)", b.inline.flags)
	}
	return b, nil
}
