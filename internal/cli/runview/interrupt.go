package runview

import (
	"context"
	"os"
	"sync"
	"time"
)

// settleLimit bounds how long a cancelled run waits for its interrupt
// request to be answered before it closes the session.
const settleLimit = time.Second

// interrupter turns Ctrl-C presses into actions: the first interrupts the
// turn (the CLI then ends it with an interrupted result), the second
// cancels the run. Before the session is up there is no turn to
// interrupt, so the first press cancels.
type interrupter struct {
	cancel context.CancelFunc
	note   func(string)

	mu        sync.Mutex
	client    interruptible
	presses   int
	cancelled bool
	answered  chan struct{} // closed when the Interrupt request ends; nil before one
}

func newInterrupter(cancel context.CancelFunc, note func(string)) *interrupter {
	return &interrupter{cancel: cancel, note: note}
}

// interruptible is a session whose turn can be interrupted: a
// *claude.Client or an agent.Session.
type interruptible interface {
	Interrupt(ctx context.Context) error
}

// attach makes the session interruptible.
func (i *interrupter) attach(c interruptible) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.client = c
}

// watch handles presses from sigs until the returned stop is called; stop
// waits for the watcher and for the Interrupt request it started, which
// ends at the latest when the session is closed.
func (i *interrupter) watch(ctx context.Context, sigs <-chan os.Signal) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-sigs: // a nil channel never fires
				i.press(ctx)
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		if ch := i.request(); ch != nil {
			<-ch
		}
	}
}

func (i *interrupter) press(ctx context.Context) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.presses++
	if i.presses == 1 && i.client != nil {
		i.note("⏹ interrupting… (Ctrl-C again to quit)")
		i.answered = make(chan struct{})
		go i.interrupt(context.WithoutCancel(ctx), i.client, i.answered)
		return
	}
	if !i.cancelled {
		i.cancelled = true
		i.cancel()
	}
}

// interrupt runs on its own goroutine: the answer can take a while and a
// second press must not wait for it. Nor may that press's cancel stop the
// request (hence a context without cancel): a stopped turn lets the CLI
// exit at once when the session closes, and closing ends this wait.
func (i *interrupter) interrupt(ctx context.Context, c interruptible, answered chan struct{}) {
	defer close(answered)
	_ = c.Interrupt(ctx) // if it fails the turn ends anyway, or by a second press
}

func (i *interrupter) request() chan struct{} {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.answered
}

// settle gives an interrupt request in flight a moment to land before the
// session is closed: a CLI whose turn was stopped exits promptly, one
// still mid-turn may finish it first.
func (i *interrupter) settle() {
	ch := i.request()
	if ch == nil {
		return
	}
	t := time.NewTimer(settleLimit)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// requested reports whether the turn was asked to stop.
func (i *interrupter) requested() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.presses > 0
}

// cancelledRun reports whether a press cancelled the run.
func (i *interrupter) cancelledRun() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.cancelled
}
