package sessions_test

import (
	"testing"
	"time"

	"github.com/tetherhq/tether/runner/sessions"
)

// A held session lives while any hold does; after the last is released
// it is closed once its grace has run, unless held again meanwhile.
func TestHoldKeepsASessionUntilGraceAfterTheLastRelease(t *testing.T) {
	const grace = 300 * time.Millisecond
	m := newManager(t, &clock{t: time.Now()}, time.Minute)
	info, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "claude", WorkspaceID: "held"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := m.Hold(ctx(t), info.ID, grace)
	if err != nil {
		t.Fatal(err)
	}
	second, err := m.Hold(ctx(t), info.ID, grace)
	if err != nil {
		t.Fatal(err)
	}
	first()
	first() // a release counts once
	time.Sleep(3 * grace)
	if got, _ := m.Get(info.ID); got.State == sessions.StateEnded {
		t.Fatal("a session still held was closed")
	}
	second()
	time.Sleep(grace / 3)
	back, err := m.Hold(ctx(t), info.ID, grace) // back within the grace
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * grace)
	if got, _ := m.Get(info.ID); got.State == sessions.StateEnded {
		t.Fatal("a session held again within its grace was closed")
	}
	left := time.Now()
	back()
	for got, _ := m.Get(info.ID); got.State != sessions.StateEnded; got, _ = m.Get(info.ID) {
		if time.Since(left) > 10*time.Second {
			t.Fatalf("the session nobody holds, %v after its grace: %+v", time.Since(left), got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if waited := time.Since(left); waited < grace {
		t.Fatalf("closed %v after the last release, before its grace (%v)", waited, grace)
	}
	if _, err := m.Hold(ctx(t), "ses_none", grace); err == nil {
		t.Fatal("a hold on no session")
	}
}
