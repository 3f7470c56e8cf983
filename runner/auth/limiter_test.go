package auth_test

import (
	"sync"
	"testing"

	"github.com/tetherhq/tether/runner/auth"
)

func TestLimiterCounts(t *testing.T) {
	l := auth.NewLimiter(2)
	r1, ok1 := l.Acquire("a")
	r2, ok2 := l.Acquire("a")
	_, ok3 := l.Acquire("a")
	rb, okb := l.Acquire("b")
	if !ok1 || !ok2 || ok3 || !okb {
		t.Fatalf("ok = %v %v %v %v", ok1, ok2, ok3, okb)
	}
	if l.Count("a") != 2 || l.Count("b") != 1 {
		t.Fatalf("counts a=%d b=%d", l.Count("a"), l.Count("b"))
	}
	r1()
	r1() // idempotent: must not free r2's slot
	if l.Count("a") != 1 {
		t.Fatalf("after double release a=%d", l.Count("a"))
	}
	r3, ok := l.Acquire("a")
	if !ok {
		t.Fatal("slot not freed")
	}
	if _, ok := l.Acquire("a"); ok {
		t.Fatal("limit exceeded after release")
	}
	r2()
	r3()
	rb()
	if l.Count("a") != 0 || l.Count("b") != 0 {
		t.Fatalf("counts a=%d b=%d", l.Count("a"), l.Count("b"))
	}
}

func TestLimiterUnlimited(t *testing.T) {
	l := auth.NewLimiter(0)
	var releases []func()
	for range 100 {
		r, ok := l.Acquire("x")
		if !ok {
			t.Fatal("unlimited limiter refused")
		}
		releases = append(releases, r)
	}
	if l.Count("x") != 100 {
		t.Fatalf("count %d", l.Count("x"))
	}
	for _, r := range releases {
		r()
	}
	if l.Count("x") != 0 {
		t.Fatalf("count %d", l.Count("x"))
	}
}

func TestLimiterConcurrent(t *testing.T) {
	l := auth.NewLimiter(5)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	var releases []func()
	for range 50 {
		wg.Go(func() {
			if r, ok := l.Acquire("id"); ok {
				mu.Lock()
				won++
				releases = append(releases, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if won != 5 {
		t.Fatalf("%d acquired, want 5", won)
	}
	for _, r := range releases {
		wg.Go(r)
		wg.Go(r)
	}
	wg.Wait()
	if l.Count("id") != 0 {
		t.Fatalf("count %d", l.Count("id"))
	}
}
