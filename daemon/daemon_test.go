package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/internal/testing/fakeorchestrator"
	"github.com/tetherhq/tether/server"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type run struct {
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, cfg Config) *run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- Run(ctx, cfg) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *run) stop(t *testing.T) {
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon did not stop")
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A whole daemon process: the agents `tether serve` would find (here the
// mock; Claude Code's CLI is a file the test takes away and puts back,
// and the status follows), a session through the orchestrator, and the
// same data after a restart.
func TestDaemon(t *testing.T) {
	o, err := fakeorchestrator.Start(fakeorchestrator.Options{Store: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	data := t.TempDir()
	cli := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(cli, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Orchestrator: o.URL(), DeviceKey: fakeorchestrator.DevKey, DataDir: data,
		Agents: server.Config{CLIPath: cli}, HealthInterval: 20 * time.Millisecond, DefaultAgent: "mock"}
	r := start(t, cfg)
	ready := func(v fakeorchestrator.View, i int) map[string]bool {
		out := map[string]bool{}
		if len(v.Statuses()) <= i {
			return nil
		}
		for _, a := range v.Statuses()[i]["agents"].([]any) {
			a := a.(map[string]any)
			out[a["type"].(string)] = a["ready"].(bool)
		}
		return out
	}
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return ready(v, 0) != nil }); err != nil {
		t.Fatal(err)
	}
	o.Read(func(v fakeorchestrator.View) {
		if got := ready(v, 0); !got["mock"] || !got["claude-code"] {
			t.Errorf("agents at connect %v", got)
		}
	})
	if err := os.Chmod(cli, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool {
		got := ready(v, 1)
		return got != nil && !got["claude-code"] && got["mock"]
	}); err != nil {
		o.Read(func(v fakeorchestrator.View) { t.Logf("statuses %v", v.Statuses()) })
		t.Fatal("no status when Claude Code's CLI went away: ", err)
	}

	if err := os.Chmod(cli, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return ready(v, 2)["claude-code"] }); err != nil {
		t.Fatal("no status when Claude Code's CLI came back: ", err)
	}

	res, err := o.Command(ctxFor(t), map[string]any{"type": "create_session"})
	if err != nil || res.Status != "ok" {
		t.Fatalf("create_session: %+v %v", res, err)
	}
	var s struct{ ID, AgentType string }
	_ = json.Unmarshal(res.Data, &s)
	if s.AgentType != "mock" {
		t.Fatalf("session %+v", s)
	}
	if res, err := o.Command(ctxFor(t), map[string]any{"type": "send_prompt", "sessionId": s.ID, "text": "hello"}); err != nil || res.Status != "ok" {
		t.Fatalf("send_prompt: %+v %v", res, err)
	}
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool {
		for _, m := range v.Messages(s.ID) {
			if m.Role == "assistant" && m.Completed {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	r.stop(t)

	start(t, cfg)
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return v.Connects() == 2 && v.Connected() }); err != nil {
		t.Fatal(err)
	}
	res, err = o.Command(ctxFor(t), map[string]any{"type": "list_sessions"})
	if err != nil || res.Status != "ok" || !strings.Contains(string(res.Data), s.ID) {
		t.Fatalf("list_sessions after a restart: %+v %v", res, err)
	}
}

func TestInvalidConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no data":      {Orchestrator: "ws://127.0.0.1:1"},
		"no URL":       {DataDir: t.TempDir()},
		"http URL":     {Orchestrator: "http://127.0.0.1:1", DataDir: t.TempDir(), DeviceKey: "k"},
		"unknown kind": {Orchestrator: "ws://127.0.0.1:1", DataDir: t.TempDir(), Agents: server.Config{CLIs: map[string]string{"no-such-agent": "/bin/true"}}},
	} {
		t.Run(name, func(t *testing.T) {
			if err := Run(ctxFor(t), cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Run: %v, want ErrInvalidConfig", err)
			}
		})
	}
}
