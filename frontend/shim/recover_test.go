package shim_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// panicOnce is an HTTP transport whose first round trip panics (as a bug
// in the shim's own code would) and whose later ones fail.
type panicOnce struct{ fired atomic.Bool }

func (p *panicOnce) RoundTrip(*http.Request) (*http.Response, error) {
	if !p.fired.Swap(true) {
		panic("the upload exploded")
	}
	return nil, errors.New("no backend here")
}

// A panic in a run's goroutine (here in the artifact upload it makes)
// ends that run, not the process: the backend is told (an error, then
// lifecycle crashed), /health says error, the panic is logged with its
// stack, and the next spawn runs to its completion.
func TestPanicInARunEndsOnlyTheRun(t *testing.T) {
	logs := &testenv.SyncBuffer{}
	h := start(t, newMock(), func(c *shim.Config) {
		c.HTTPClient = &http.Client{Transport: &panicOnce{}}
		c.Bootstrap = shim.Bootstrap{ArtifactUploadEndpoint: "http://127.0.0.1:9/api/artifacts"}
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("Write the notes"), nil)
	var seen []string
	for {
		e := events.Next(wait)
		seen = append(seen, e.Type()+":"+e.Str("action")+e.Str("severity"))
		if e.Type() == "completion" {
			t.Fatalf("the run completed: the upload did not panic (%v)", seen)
		}
		if e.Type() == "lifecycle" && e.Str("action") == "crashed" {
			if !strings.Contains(e.Str("reason"), "the upload exploded") || seen[len(seen)-2] != "error:critical" {
				t.Fatalf("crash %+v after %v", e.Event, seen)
			}
			break
		}
	}
	var health shim.Health
	h.Must(200, "GET", "/health", nil, &health)
	if health.AgentStatus != shim.StatusError {
		t.Errorf("after the crash: %s", health.AgentStatus)
	}
	if log := logs.String(); !strings.Contains(log, "level=ERROR") || !strings.Contains(log, "recovered from a panic") || !strings.Contains(log, "shim: run") ||
		!strings.Contains(log, "the upload exploded") || !strings.Contains(log, "goroutine") {
		t.Errorf("the panic is not logged with its stack:\n%s", log)
	}
	h.Must(200, "POST", "/spawn", brief("Write the notes"), nil)
	done := events.Until("completion", wait)
	if last := done[len(done)-1]; last.Str("outcome") != "success" {
		t.Errorf("the next run: %+v", last.Event)
	}
}

// A panic in a request's handler (here /health's usage report) is
// answered 500 with a detail and logged; the shim answers the next one.
func TestPanicInARequestIsAnswered(t *testing.T) {
	logs := &testenv.SyncBuffer{}
	var fired atomic.Bool
	h := start(t, newMock(), func(c *shim.Config) {
		c.Usage = func(context.Context) (shim.ResourceUsage, error) {
			if !fired.Swap(true) {
				panic("the usage report exploded")
			}
			return shim.ResourceUsage{MemoryMb: 1}, nil
		}
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	var reply map[string]string
	if got := h.Call("GET", "/health", nil, &reply); got != http.StatusInternalServerError || reply["detail"] == "" {
		t.Fatalf("/health that panicked: %d %v", got, reply)
	}
	if log := logs.String(); !strings.Contains(log, "request panicked") || !strings.Contains(log, "the usage report exploded") ||
		!strings.Contains(log, "path=/health") {
		t.Errorf("the panic is not logged:\n%s", log)
	}
	h.Must(200, "GET", "/health", nil, nil)
}
