package transport

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// watcher waits from one goroutine for what the children of a Launcher
// do while they idle: their exits (a pidfd each) and their stderr output.
// A goroutine per child for each would cost its stack for the child's
// whole life; this one's is shared, and the work an event brings runs on
// a goroutine made for it (see watchExit, watchReadable). Its epoll
// instance waits in the runtime's poller, so no thread is held either.
// It runs while it watches anything; the zero watcher is ready to use.
type watcher struct {
	mu      sync.Mutex
	ep      *os.File // the epoll instance; nil while nothing is watched
	epfd    int
	done    chan struct{} // closed when ep's loop has returned
	next    int32
	watches map[int32]*watch // by the token in their epoll events
}

// watch is one descriptor watched: fired (under the watcher's lock) when
// it is ready.
type watch struct {
	fd   int
	fire func(tok int32)
}

// errNotWatching: the kernel offers no pidfd or epoll here.
var errNotWatching = errors.New("transport: cannot watch the child here")

// watchExit calls exited, once, when the child pid has exited (it is not
// reaped): with nil, or with why it could not tell. exited runs with the
// watcher's lock held and must only hand the work on (start a goroutine).
func (w *watcher) watchExit(pid int, exited func(error)) error {
	pidfd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return errNotWatching
	}
	fire := func(tok int32) {
		gone, err := pidfdExited(pidfd)
		if !gone && err == nil {
			_ = w.rearmLocked(tok) // woken early: wait on
			return
		}
		w.removeLocked(tok)
		_ = unix.Close(pidfd)
		exited(err)
	}
	if _, err := w.add(pidfd, fire); err != nil {
		_ = unix.Close(pidfd)
		return err
	}
	return nil
}

// watchReadable calls ready when f has something to read or has ended,
// then not again until rearm. ready runs with the watcher's lock held and
// must only hand the work on. f must stay open until unwatch.
func (w *watcher) watchReadable(f *os.File, ready func()) (int32, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var tok int32
	cerr := raw.Control(func(fd uintptr) { tok, err = w.add(int(fd), func(int32) { ready() }) })
	if cerr != nil {
		return 0, cerr
	}
	return tok, err
}

// add watches fd (one-shot: rearm waits again) and starts the loop with
// the first watch.
func (w *watcher) add(fd int, fire func(tok int32)) (int32, error) {
	w.mu.Lock()
	tok, err := w.addLocked(fd, fire)
	var done <-chan struct{}
	if err != nil {
		done = w.stopIfIdleLocked()
	}
	w.mu.Unlock()
	if done != nil {
		<-done
	}
	return tok, err
}

func (w *watcher) addLocked(fd int, fire func(tok int32)) (int32, error) {
	if w.ep == nil {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return 0, errNotWatching
		}
		// Non-blocking, so os.NewFile puts it in the runtime's poller.
		if err := unix.SetNonblock(epfd, true); err != nil {
			_ = unix.Close(epfd)
			return 0, errNotWatching
		}
		w.ep, w.epfd, w.done = os.NewFile(uintptr(epfd), "epoll"), epfd, make(chan struct{})
		w.watches = map[int32]*watch{}
		go w.loop(w.ep, w.done)
	}
	for {
		w.next++
		if _, taken := w.watches[w.next]; !taken {
			break
		}
	}
	tok := w.next
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: tok}
	if err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return 0, err
	}
	w.watches[tok] = &watch{fd: fd, fire: fire}
	return tok, nil
}

// rearm waits again for the watch tok, which has fired.
func (w *watcher) rearm(tok int32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rearmLocked(tok)
}

func (w *watcher) rearmLocked(tok int32) error {
	wt := w.watches[tok]
	if wt == nil {
		return os.ErrClosed
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: tok}
	return unix.EpollCtl(w.epfd, unix.EPOLL_CTL_MOD, wt.fd, &ev)
}

// unwatch stops watching tok; once it returns, its ready is not called
// again. The last watch ends the loop, and unwatch waits for that.
func (w *watcher) unwatch(tok int32) {
	w.mu.Lock()
	w.removeLocked(tok)
	done := w.stopIfIdleLocked()
	w.mu.Unlock()
	if done != nil {
		<-done
	}
}

func (w *watcher) removeLocked(tok int32) {
	if wt := w.watches[tok]; wt != nil {
		_ = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, wt.fd, nil)
		delete(w.watches, tok)
	}
}

// stopIfIdleLocked closes the epoll instance once nothing is watched,
// which ends its loop; it returns the channel closed when it has.
func (w *watcher) stopIfIdleLocked() <-chan struct{} {
	if w.ep == nil || len(w.watches) > 0 {
		return nil
	}
	_ = w.ep.Close()
	done := w.done
	w.ep, w.epfd, w.done, w.watches = nil, -1, nil, nil
	return done
}

// loop fires the watches ep reports until ep is closed.
func (w *watcher) loop(ep *os.File, done chan struct{}) {
	defer close(done)
	raw, err := ep.SyscallConn()
	if err != nil {
		return
	}
	events := make([]unix.EpollEvent, 16)
	for {
		var n int
		err := raw.Read(func(fd uintptr) bool {
			for {
				var err error
				n, err = unix.EpollWait(int(fd), events, 0)
				switch {
				case err == unix.EINTR:
					continue
				case err != nil:
					n = 0
					return true // the next round finds ep closed
				}
				return n > 0 // none ready: wait in the poller
			}
		})
		if err != nil {
			return // closed: nothing is watched any more
		}
		w.mu.Lock()
		if w.ep != ep {
			w.mu.Unlock()
			return
		}
		for _, ev := range events[:n] {
			if wt := w.watches[ev.Fd]; wt != nil {
				wt.fire(ev.Fd)
			}
		}
		// An exit removes its own watch: the last one ends the loop.
		if w.stopIfIdleLocked() != nil {
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}
