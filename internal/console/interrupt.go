package console

import (
	"context"
	"os"
	"sync"

	"github.com/tetherhq/tether/claude"
)

// interrupter turns Ctrl-C presses into actions: the first interrupts the
// turn (the CLI then ends it with an interrupted result), the second
// cancels the run. Before the session is up there is no turn to
// interrupt, so the first press cancels.
type interrupter struct {
	cancel context.CancelFunc
	note   func(string)

	mu        sync.Mutex
	client    *claude.Client
	presses   int
	cancelled bool
	calls     sync.WaitGroup // Interrupt requests in flight
}

func newInterrupter(cancel context.CancelFunc, note func(string)) *interrupter {
	return &interrupter{cancel: cancel, note: note}
}

// attach makes the session interruptible.
func (i *interrupter) attach(c *claude.Client) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.client = c
}

// watch handles presses from sigs until the returned stop is called; stop
// waits for the watcher and for Interrupt requests it started.
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
		i.calls.Wait()
	}
}

func (i *interrupter) press(ctx context.Context) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.presses++
	if i.presses == 1 && i.client != nil {
		i.note("⏹ interrupting… (Ctrl-C again to quit)")
		c := i.client
		i.calls.Add(1)
		go func() { // the answer can take a while; a second press must not wait for it
			defer i.calls.Done()
			_ = c.Interrupt(ctx) // if it fails, the turn ends on its own or by the second press
		}()
		return
	}
	if !i.cancelled {
		i.cancelled = true
		i.cancel()
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
