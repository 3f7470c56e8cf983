package safe_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/safe"
)

func TestGoRecovers(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	got := make(chan *safe.PanicError, 1)
	safe.Go(log, "test goroutine", func(p *safe.PanicError) { got <- p }, func() {
		var m map[string]int
		m["x"] = 1 // a nil map write: a runtime panic
	})
	p := <-got
	if p.Where != "test goroutine" || !strings.Contains(p.Error(), "assignment to entry in nil map") ||
		!bytes.Contains(p.Stack, []byte("safe_test")) {
		t.Fatalf("recovered %v with stack:\n%s", p, p.Stack)
	}
	if !strings.Contains(logged.String(), "recovered from a panic") || !strings.Contains(logged.String(), "test goroutine") {
		t.Fatalf("log: %s", logged.String())
	}
}

func TestRecoverKeepsAnErrorMatchable(t *testing.T) {
	got := make(chan *safe.PanicError, 1)
	safe.Go(slog.New(slog.NewTextHandler(io.Discard, nil)), "w", func(p *safe.PanicError) { got <- p }, func() { panic(io.ErrUnexpectedEOF) })
	if p := <-got; !errors.Is(p, io.ErrUnexpectedEOF) {
		t.Fatalf("%v does not match its cause", p)
	}
}

func TestRecoverWithoutPanicDoesNothing(t *testing.T) {
	done := make(chan struct{})
	safe.Go(nil, "w", func(*safe.PanicError) { t.Error("onPanic without a panic") }, func() { close(done) })
	<-done
}
