package claudecli

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/mockclaude"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the mock CLI for the agent driver's tests.
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockclaude.Main())
	}
	goleak.VerifyTestMain(m)
}

func line(n int) relayOut { return relayOut{line: make([]byte, n)} }

// take hands over every line already queued, up to max, and stops before
// an error, which comes alone.
func TestOutQueueTake(t *testing.T) {
	q := newOutQueue()
	ctx := context.Background()
	for _, o := range []relayOut{line(1), line(2), line(3), {err: io.EOF}, line(4)} {
		if err := q.put(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	got, ok := q.take(nil, 2)
	if !ok || len(got) != 2 || len(got[1].line) != 2 {
		t.Fatalf("first take: %v %+v", ok, got)
	}
	got, _ = q.take(got[:0], 10)
	if len(got) != 1 || len(got[0].line) != 3 {
		t.Fatalf("second take stops before the error: %+v", got)
	}
	got, _ = q.take(got[:0], 10)
	if len(got) != 1 || !errors.Is(got[0].err, io.EOF) {
		t.Fatalf("third take is the error alone: %+v", got)
	}
	got, _ = q.take(got[:0], 10)
	if len(got) != 1 || len(got[0].line) != 4 {
		t.Fatalf("fourth take: %+v", got)
	}
	if _, ok := q.take(nil, 10); ok || q.bytes != 0 {
		t.Fatalf("empty queue: ok %v, %d bytes charged", ok, q.bytes)
	}
}

// Past its byte budget the queue makes the reader wait until lines are
// taken; a line larger than the budget still passes, alone.
func TestOutQueueBounded(t *testing.T) {
	q := newOutQueue()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.put(ctx, line(2*outQueueBytes)); err != nil {
		t.Fatal(err)
	}
	full, stop := context.WithCancel(ctx)
	stop()
	if err := q.put(full, line(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("put over the budget = %v, want it to wait", err)
	}
	put := make(chan error, 1)
	go func() { put <- q.put(ctx, line(1)) }()
	if got, _ := q.take(nil, 10); len(got) != 1 || len(got[0].line) != 2*outQueueBytes {
		t.Fatalf("took %+v", got)
	}
	if err := <-put; err != nil {
		t.Fatal(err)
	}
	if got, _ := q.take(nil, 10); len(got) != 1 || len(got[0].line) != 1 {
		t.Fatalf("took %+v", got)
	}
}
