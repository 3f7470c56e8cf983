package boltfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// The layout of a bbolt file (format version 2), as bbolt v1.5 writes it:
// structs in the machine's byte order, so a file is only read on a machine
// of the order that wrote it.
const (
	magic   = 0xED0CDAED
	version = 2

	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	elemSize         = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	bucketHeaderSize = 16 // root pgid u64, sequence u64
	metaSize         = 64 // magic, version, pageSize, flags u32; root bucket 16; freelist, pgid, txid, checksum u64
	metaSummed       = 56 // the bytes the checksum covers

	branchFlag   = 0x01
	leafFlag     = 0x02
	metaFlag     = 0x04
	freelistFlag = 0x10

	bucketLeafFlag = 0x01

	noFreelist = ^uint64(0) // the meta's freelist when the freelist is not written (NoFreelistSync)

	// Page sizes bbolt looks for its second meta page at (1 KiB to 16 MiB).
	minPageSize = 1 << 10
	maxPageSize = 1 << 24
)

var order = binary.NativeEndian

// meta is what a meta page says.
type meta struct {
	pageSize uint32
	root     uint64 // the root bucket's page
	freelist uint64 // the freelist's page, or noFreelist
	pgid     uint64 // the high-water mark: pages [0, pgid) are the file's
	txid     uint64
}

// Why a meta page is not valid, in the words a reason uses.
var (
	errNoMagic   = errors.New("no bbolt mark")
	errVersion   = errors.New("an unknown bbolt version")
	errChecksum  = errors.New("a wrong checksum")
	errMetaShort = errors.New("cut short")
)

// parseMeta decodes the meta page at the start of b, as bbolt's
// Meta.Validate checks it.
func parseMeta(b []byte) (meta, error) {
	if len(b) < pageHeaderSize+metaSize {
		return meta{}, errMetaShort
	}
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	switch {
	case order.Uint32(m[0:]) != magic:
		return meta{}, errNoMagic
	case order.Uint32(m[4:]) != version:
		return meta{}, errVersion
	}
	h := fnv.New64a()
	h.Write(m[:metaSummed])
	if h.Sum64() != order.Uint64(m[metaSummed:]) {
		return meta{}, errChecksum
	}
	return meta{
		pageSize: order.Uint32(m[8:]),
		root:     order.Uint64(m[16:]),
		freelist: order.Uint64(m[32:]),
		pgid:     order.Uint64(m[40:]),
		txid:     order.Uint64(m[48:]),
	}, nil
}

// header is what a file's meta pages say: its page size, the meta bbolt
// uses (the valid one with the higher transaction id) and the other one
// when it is valid too.
type header struct {
	pageSize uint64
	meta     meta
	older    *meta
}

// readHeader reads the meta pages of a file of size bytes as bbolt's Open
// does: the page size from the first meta page, else from the second one
// looked for at every page size, then both meta pages at that size. The
// page size must be one bbolt writes.
func readHeader(r io.ReaderAt, size int64) (header, error) {
	pageSize, err := findPageSize(r, size)
	if err != nil {
		return header{}, err
	}
	if size < 2*int64(pageSize) {
		return header{}, fmt.Errorf("it is %d bytes long, shorter than its two meta pages", size)
	}
	var metas [2]meta
	var errs [2]error
	for i := range metas {
		b := make([]byte, pageHeaderSize+metaSize)
		if _, err := r.ReadAt(b, int64(i)*int64(pageSize)); err != nil {
			errs[i] = errMetaShort
			continue
		}
		metas[i], errs[i] = parseMeta(b)
	}
	h := header{pageSize: uint64(pageSize)}
	switch {
	case errs[0] != nil && errs[1] != nil:
		return header{}, fmt.Errorf("both of its meta pages are damaged (the first has %v, the second %v)", errs[0], errs[1])
	case errs[1] != nil || errs[0] == nil && metas[0].txid >= metas[1].txid:
		h.meta = metas[0]
		if errs[1] == nil {
			h.older = &metas[1]
		}
	default:
		h.meta = metas[1]
		if errs[0] == nil {
			h.older = &metas[0]
		}
	}
	return h, nil
}

// readCheckedHeader is readHeader, and the meta bbolt will use checked
// against the file (checkMeta).
func readCheckedHeader(r io.ReaderAt, size int64) (header, error) {
	h, err := readHeader(r, size)
	if err != nil {
		return header{}, err
	}
	return h, h.checkMeta(h.meta, size)
}

// checkMeta checks what bbolt does not before it maps the file: that the
// file holds every page the meta counts (bbolt would fault reading past
// its end), and that the root bucket and the freelist are among them.
func (h header) checkMeta(m meta, size int64) error {
	if uint64(m.pageSize) != h.pageSize {
		return fmt.Errorf("its meta pages disagree on the page size (%d and %d bytes)", h.pageSize, m.pageSize)
	}
	if m.pgid < 3 {
		return fmt.Errorf("its meta page counts %d pages, fewer than a bbolt file has", m.pgid)
	}
	if m.pgid > uint64(size)/h.pageSize {
		return fmt.Errorf("it is cut short, at %d bytes of the %d its %d pages take", size, mulClamp(m.pgid, h.pageSize), m.pgid)
	}
	if m.root < 2 || m.root >= m.pgid {
		return fmt.Errorf("its root page %d is not one of its pages", m.root)
	}
	if m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.pgid) {
		return fmt.Errorf("its freelist page %d is not one of its pages", m.freelist)
	}
	return nil
}

// findPageSize finds the page size as bbolt's getPageSize does. A page
// size no version of bbolt writes is an error here, where bbolt would go
// on with it.
func findPageSize(r io.ReaderAt, size int64) (uint32, error) {
	if size < pageHeaderSize+metaSize {
		return 0, fmt.Errorf("it is %d bytes long, too short for a bbolt file", size)
	}
	var firstErr error
	readable := false
	buf := make([]byte, 0x1000)
	if n, err := r.ReadAt(buf, 0); err == nil || n >= pageHeaderSize+metaSize {
		readable = true
		m, err := parseMeta(buf[:n])
		if err == nil {
			return checkPageSize(m.pageSize)
		}
		firstErr = err
	}
	for i := 0; i <= 14; i++ {
		pos := int64(minPageSize) << i
		if pos >= size-minPageSize {
			break
		}
		n, err := r.ReadAt(buf, pos)
		if err != nil && !(errors.Is(err, io.EOF) && int64(n) == size-pos) {
			continue
		}
		readable = true
		if m, err := parseMeta(buf[:n]); err == nil {
			return checkPageSize(m.pageSize)
		}
	}
	switch {
	case errors.Is(firstErr, errNoMagic):
		return 0, errors.New("it is not a bbolt file (neither of its meta pages has the bbolt mark)")
	case readable:
		// bbolt would take the system's page size and look there.
		return checkPageSize(uint32(os.Getpagesize()))
	}
	return 0, errors.New("its meta pages cannot be read")
}

func checkPageSize(n uint32) (uint32, error) {
	if n < minPageSize || n > maxPageSize || n&(n-1) != 0 {
		return 0, fmt.Errorf("its meta page gives a page size of %d bytes, which bbolt does not write", n)
	}
	return n, nil
}

// mulClamp is a*b, or the largest uint64 when that overflows.
func mulClamp(a, b uint64) uint64 {
	if b != 0 && a > ^uint64(0)/b {
		return ^uint64(0)
	}
	return a * b
}
