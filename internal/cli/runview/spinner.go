package runview

import "time"

// spinner animates the screen's waiting indicator on its own goroutine.
// Run owns it: it is started once and stopped once, and stop returns only
// after the goroutine has ended and the last frame is erased. A nil spinner
// (stderr is not a terminal) does nothing.
type spinner struct {
	scr  *screen
	quit chan struct{}
	done chan struct{}
}

func startSpinner(scr *screen, every time.Duration) *spinner {
	s := &spinner{scr: scr, quit: make(chan struct{}), done: make(chan struct{})}
	go s.loop(every)
	return s
}

func (s *spinner) loop(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			s.scr.tick()
		}
	}
}

func (s *spinner) stop() {
	if s == nil {
		return
	}
	close(s.quit)
	<-s.done
	s.scr.idle()
}
