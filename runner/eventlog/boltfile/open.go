package boltfile

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
	"time"

	berrors "go.etcd.io/bbolt/errors"
)

// ErrInUse is returned by Check and OpenPath for a file another process
// holds open for writing.
var ErrInUse = errors.New("boltfile: file is in use")

// lockRetry is how often a lock held by another process is tried again
// (bbolt's own interval).
const lockRetry = 50 * time.Millisecond

// OpenChecked returns an Options.OpenFile for bbolt that checks the file
// before bbolt maps it (see check): a damaged file fails bbolt's Open with
// a *DamagedError naming path, whose Err is sentinel. It takes the lock
// bbolt takes (exclusive to write, shared to read), waiting up to timeout
// (0: for ever, negative: not at all) and failing with bbolt's ErrTimeout,
// so that no other process writes the file while it is checked; it hands
// the file to bbolt locked, and bbolt locks it again, which flock grants
// on the same open file. A file cut short is an error, never a fault (see
// checkMapped).
func OpenChecked(timeout time.Duration, sentinel error) func(string, int, os.FileMode) (*os.File, error) {
	return func(path string, flag int, mode os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(path, flag, mode)
		if err != nil {
			return nil, err
		}
		how := syscall.LOCK_EX
		if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
			how = syscall.LOCK_SH
		}
		if err := lock(f, how, timeout); err != nil {
			_ = f.Close()
			return nil, err
		}
		if err := checkFile(f); err != nil {
			_ = f.Close()
			return nil, damaged(path, err, sentinel)
		}
		return f, nil
	}
}

// Check checks the file at path (see check) without writing to it: nil
// when bbolt can open it, a *DamagedError when it cannot, ErrInUse when a
// process holds it open for writing (a running store: the file cannot be
// read consistently from outside).
func Check(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := lock(f, syscall.LOCK_SH, -1); err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return fmt.Errorf("%w: %s", ErrInUse, path)
		}
		return err
	}
	if err := checkFile(f); err != nil {
		return damaged(path, err, nil)
	}
	return nil
}

// checkFile checks f, which the caller holds locked, through a read-only
// mapping: reading the pages in place costs a fraction of copying them
// out, and the check reads every page of every tree.
func checkFile(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size < pageHeaderSize+metaSize || int64(int(size)) != size {
		return check(reader{f, uint64(size)}, size)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return check(reader{f, uint64(size)}, size)
	}
	defer syscall.Munmap(m)
	return checkMapped(m, size)
}

// checkMapped checks the file of size bytes mapped at m. The check reads
// no page before it has checked the file holds it, so the mapping is read
// only where the file is. A file cut meanwhile (by something that ignores
// the lock) would make that read fault, which kills the process: on this
// goroutine the fault is a panic instead, recovered here, and the file is
// reported damaged.
func checkMapped(m mapping, size int64) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("it was cut short while it was read (%v)", r)
		}
	}()
	return check(m, size)
}

// damaged makes a check's error a *DamagedError, unless it is about
// reading the file at all (an I/O error is not damage to salvage).
func damaged(path string, err, sentinel error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return err
	}
	return &DamagedError{Path: path, Reason: err.Error(), Err: sentinel}
}

// lock takes a flock on f, as bbolt does.
func lock(f *os.File, how int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		case timeout < 0 || timeout > 0 && time.Now().After(deadline):
			return berrors.ErrTimeout
		}
		time.Sleep(lockRetry)
	}
}
