package auth

import "sync"

// Limiter caps how many connections each token id holds at once. The zero
// value is not usable; use NewLimiter. Safe for concurrent use.
type Limiter struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

// NewLimiter allows max connections per id; max <= 0 means no limit (the
// counts are still kept).
func NewLimiter(max int) *Limiter {
	return &Limiter{max: max, n: map[string]int{}}
}

// Acquire takes a slot for id. ok is false when id already holds the
// maximum; otherwise release gives the slot back (calling it again does
// nothing).
func (l *Limiter) Acquire(id string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.n[id] >= l.max {
		return func() {}, false
	}
	l.n[id]++
	var once sync.Once
	return func() { once.Do(func() { l.release(id) }) }, true
}

func (l *Limiter) release(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[id] <= 1 {
		delete(l.n, id)
		return
	}
	l.n[id]--
}

// Count is how many slots id holds now.
func (l *Limiter) Count(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[id]
}
