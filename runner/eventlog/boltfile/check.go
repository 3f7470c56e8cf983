package boltfile

import (
	"bytes"
	"errors"
	"fmt"
)

// check reads a file of size bytes as bbolt will and returns why bbolt
// cannot be given it, nil when it can. It follows what bbolt follows when
// it opens a file and reads it: the meta pages, every page of every
// bucket's tree (each must be in the file, say it is the page it is
// referenced as, be a branch or a leaf, hold its elements and keys, keep
// its keys in order, and be reached once), inline buckets, and the
// freelist (its pages in the file and none in use). Values are not read:
// what they hold is the store's business. It reads each page once, and
// of large values only the page that starts them.
//
// An empty file is a new one, which bbolt initialises: nothing to check.
func check(src source, size int64) error {
	if size == 0 {
		return nil
	}
	h, err := readCheckedHeader(src, size)
	if err != nil {
		return err
	}
	c := &checker{ps: &pages{src: src, pageSize: h.pageSize, hwm: h.meta.pgid}, seen: make([]uint64, (h.meta.pgid+63)/64)}
	c.seen[0] |= 3 // the meta pages
	if _, err := c.tree(h.meta.root, nil, nil); err != nil {
		return err
	}
	if h.meta.freelist != noFreelist {
		return c.freelist(h.meta.freelist)
	}
	return nil
}

// checker walks a file's trees.
type checker struct {
	ps   *pages
	seen []uint64 // a bit per page reached
}

// mark records that p and its overflow pages were reached.
func (c *checker) mark(p *page) error {
	for id := p.id; id <= p.id+uint64(p.overflow); id++ {
		w, bit := id/64, uint64(1)<<(id%64)
		if c.seen[w]&bit != 0 {
			return fmt.Errorf("page %d is reached twice", id)
		}
		c.seen[w] |= bit
	}
	return nil
}

// tree checks the tree (or subtree) whose root is page id, whose keys must
// be at least min and below max (nil: no bound), and returns its last key.
// The key order is checked as bbolt's own check does.
func (c *checker) tree(id uint64, min, max []byte) ([]byte, error) {
	p, err := c.ps.read(id)
	if err != nil {
		return nil, err
	}
	if err := c.mark(p); err != nil {
		return nil, err
	}
	if err := p.elems(); err != nil {
		return nil, err
	}
	if p.flags == leafFlag {
		return c.leaf(p, min, max)
	}
	running, last := min, []byte(nil)
	for i := range p.count {
		e, err := p.elem(i)
		if err != nil {
			return nil, err
		}
		if err := keyOrder(p, i, e.key, running, max); err != nil {
			return nil, err
		}
		next := max
		if i+1 < p.count {
			ne, err := p.elem(i + 1)
			if err != nil {
				return nil, err
			}
			next = ne.key
		}
		if last, err = c.tree(e.child, e.key, next); err != nil {
			return nil, err
		}
		running = last
	}
	return last, nil
}

// leaf checks a leaf page and the buckets it holds, and returns its last
// key (nil when it has none).
func (c *checker) leaf(p *page, min, max []byte) ([]byte, error) {
	running := min
	for i := range p.count {
		e, err := p.elem(i)
		if err != nil {
			return nil, err
		}
		if err := keyOrder(p, i, e.key, running, max); err != nil {
			return nil, err
		}
		running = e.key
		if e.isBucket() {
			if err := c.bucket(p, e); err != nil {
				return nil, err
			}
		}
	}
	if p.count == 0 {
		return nil, nil
	}
	return running, nil
}

// bucket checks the bucket leaf element e of p holds.
func (c *checker) bucket(p *page, e elem) error {
	v, err := p.value(e)
	if err != nil {
		return err
	}
	b, err := parseBucket(v)
	if err != nil {
		return fmt.Errorf("%s holds %w", p.name(), err)
	}
	if b.inline == nil {
		_, err = c.tree(b.root, nil, nil)
		return err
	}
	if err := b.inline.elems(); err != nil {
		return err
	}
	_, err = c.leaf(b.inline, nil, nil)
	return err
}

// keyOrder checks element i's key against the previous one (or the least
// key its subtree may hold) and the bound above, as bbolt's verifyKeyOrder.
func keyOrder(p *page, i int, key, prev, max []byte) error {
	if prev != nil && (i == 0 && bytes.Compare(prev, key) > 0 || i > 0 && bytes.Compare(prev, key) >= 0) ||
		max != nil && bytes.Compare(key, max) >= 0 {
		return fmt.Errorf("the keys of %s are out of order", p.name())
	}
	return nil
}

// freelist checks the freelist page: bbolt hands its pages out to new
// data, so each must be in the file, and none in use or listed twice.
func (c *checker) freelist(id uint64) error {
	p, err := c.ps.read(id)
	if err != nil {
		return fmt.Errorf("its freelist is unusable (%w)", err)
	}
	if p.flags != freelistFlag {
		return fmt.Errorf("its freelist page %d holds something else (flags %#x)", id, p.flags)
	}
	if err := c.mark(p); err != nil {
		return err
	}
	count, off := uint64(p.count), uint64(pageHeaderSize)
	if count == 0xFFFF { // the count is the first id
		b, err := p.bytes(off, 8)
		if err != nil {
			return fmt.Errorf("the count of its freelist page %d is %w", id, err)
		}
		count, off = order.Uint64(b), off+8
	}
	if count > uint64(len(p.buf))/8 {
		return fmt.Errorf("its freelist page %d lists more pages than it holds", id)
	}
	ids, err := p.bytes(off, count*8)
	if err != nil {
		if errors.Is(err, errOutside) {
			return fmt.Errorf("its freelist page %d lists more pages than it holds", id)
		}
		return fmt.Errorf("its freelist page %d is %w", id, err)
	}
	for ; len(ids) > 0; ids = ids[8:] {
		free := order.Uint64(ids)
		if free < 2 || free >= c.ps.hwm {
			return fmt.Errorf("its freelist names page %d, which is not one of its pages", free)
		}
		w, bit := free/64, uint64(1)<<(free%64)
		if c.seen[w]&bit != 0 {
			return fmt.Errorf("its freelist names page %d, which is in use or named twice", free)
		}
		c.seen[w] |= bit
	}
	return nil
}
