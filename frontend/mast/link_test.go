package mast

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/fakeorchestrator"
)

// On connect the daemon says which agents it has and whether each is
// ready, and says it again when one's readiness changes; it sends
// heartbeats with ISO timestamps, which the orchestrator acknowledges.
func TestStatusAndHeartbeat(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	o := startOrchestrator(t, fakeorchestrator.Options{})
	var codexReady atomic.Bool
	startDaemon(t, c, o, func(cfg *Config) {
		cfg.Heartbeat, cfg.HealthInterval = 20*time.Millisecond, 10*time.Millisecond
		cfg.Health = func() map[string]error {
			h := map[string]error{"mock": nil, "claude": errors.New("no claude on PATH"), "codex": errors.New("no codex")}
			if codexReady.Load() {
				h["codex"] = nil
			}
			return h
		}
	})
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return len(v.Statuses()) >= 1 && len(v.Heartbeats()) >= 2 }); err != nil {
		t.Fatal(err)
	}
	o.Read(func(v fakeorchestrator.View) {
		st := v.Statuses()[0]
		if st["agentReady"] != true {
			t.Errorf("status %v: agentReady should be true with mock ready", st)
		}
		agents := map[string]bool{}
		for _, a := range st["agents"].([]any) {
			a := a.(map[string]any)
			agents[a["type"].(string)] = a["ready"].(bool)
		}
		if want := map[string]bool{"mock": true, "claude-code": false, "codex": false}; !equalMaps(agents, want) {
			t.Errorf("agents %v, want %v", agents, want)
		}
		iso := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$`)
		for _, hb := range v.Heartbeats() {
			ts, _ := hb["timestamp"].(string)
			if !iso.MatchString(ts) {
				t.Errorf("heartbeat timestamp %q is not ISO", ts)
			}
		}
		if len(v.Statuses()) != 1 {
			t.Errorf("%d statuses while nothing changed", len(v.Statuses()))
		}
	})
	codexReady.Store(true)
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool {
		if len(v.Statuses()) < 2 {
			return false
		}
		for _, a := range v.Statuses()[1]["agents"].([]any) {
			if a := a.(map[string]any); a["type"] == "codex" {
				return a["ready"] == true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
}

func equalMaps(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Without a key the daemon pairs: a six-digit code on the pairing socket,
// shown to the user, confirmed, and the key from pair_response saved
// (0600) and used.
func TestPairing(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	o := startOrchestrator(t, fakeorchestrator.Options{NoDevKey: true})
	keyFile := filepath.Join(t.TempDir(), "mast", "device-key.json")
	codes := make(chan string, 2)
	startDaemon(t, c, o, func(cfg *Config) {
		cfg.DeviceKey, cfg.KeyFile = "", keyFile
		cfg.ShowPairingCode = func(code string) { codes <- code }
	})
	var code string
	select {
	case code = <-codes:
	case <-time.After(10 * time.Second):
		t.Fatal("no pairing code shown")
	}
	if !regexp.MustCompile(`^[1-9]\d{5}$`).MatchString(code) {
		t.Fatalf("code %q is not six digits from 100000", code)
	}
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return len(v.PairRequests()) == 1 }); err != nil {
		t.Fatal(err)
	}
	o.Read(func(v fakeorchestrator.View) {
		if v.PairRequests()[0]["pairingCode"] != code {
			t.Errorf("pair requests %v", v.PairRequests())
		}
	})
	if _, err := o.Verify(ctxFor(t), "000000"); err == nil {
		t.Fatal("a wrong code was accepted")
	}
	key, err := o.Verify(ctxFor(t), code)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Wait(ctxFor(t), connected); err != nil {
		t.Fatal(err)
	}
	saved, err := LoadKey(keyFile)
	if err != nil || saved != key {
		t.Fatalf("saved key %q (%v), want %q", saved, err, key)
	}
	fi, err := os.Stat(keyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

// A saved key the orchestrator refuses (401) is removed and the daemon
// pairs again; a key given outright that is refused stops the daemon
// with ErrUnauthorized.
func TestUnauthorized(t *testing.T) {
	t.Run("saved key re-pairs", func(t *testing.T) {
		c := openCore(t, t.TempDir(), nil)
		o := startOrchestrator(t, fakeorchestrator.Options{NoDevKey: true})
		keyFile := filepath.Join(t.TempDir(), "device-key.json")
		if err := SaveKey(keyFile, "dk_revoked", time.Now()); err != nil {
			t.Fatal(err)
		}
		codes := make(chan string, 2)
		startDaemon(t, c, o, func(cfg *Config) {
			cfg.DeviceKey, cfg.KeyFile = "", keyFile
			cfg.ShowPairingCode = func(code string) { codes <- code }
		})
		var code string
		select {
		case code = <-codes:
		case <-time.After(10 * time.Second):
			t.Fatal("the refused key did not lead to pairing")
		}
		if k, _ := LoadKey(keyFile); k != "" {
			t.Fatalf("the refused key %q is still saved", k)
		}
		if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return len(v.PairRequests()) == 1 }); err != nil {
			t.Fatal(err)
		}
		key, err := o.Verify(ctxFor(t), code)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Wait(ctxFor(t), connected); err != nil {
			t.Fatal(err)
		}
		if k, _ := LoadKey(keyFile); k != key {
			t.Fatalf("saved %q, want the new key", k)
		}
		o.Read(func(v fakeorchestrator.View) {
			if v.Rejected() != 1 {
				t.Errorf("%d refusals, want 1", v.Rejected())
			}
		})
	})
	t.Run("given key stops", func(t *testing.T) {
		c := openCore(t, t.TempDir(), nil)
		o := startOrchestrator(t, fakeorchestrator.Options{NoDevKey: true})
		r := startDaemon(t, c, o, func(cfg *Config) { cfg.DeviceKey = "dk_wrong" })
		select {
		case err := <-r.done:
			close(r.done)
			if !errors.Is(err, ErrUnauthorized) {
				t.Fatalf("Run: %v, want ErrUnauthorized", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the daemon went on with a refused key")
		}
	})
}

// Reconnects wait as the seed says, growing from 1 s to the 30 s cap
// with jitter, and start over after a connection opens.
func TestReconnectBackoff(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	o := startOrchestrator(t, fakeorchestrator.Options{})
	var mu sync.Mutex
	var waits []time.Duration
	startDaemon(t, c, o, func(cfg *Config) {
		cfg.After = quickBackoff(func(d time.Duration) { mu.Lock(); waits = append(waits, d); mu.Unlock() })
		cfg.Jitter = func() float64 { return 0 }
	})
	if err := o.Wait(ctxFor(t), connected); err != nil {
		t.Fatal(err)
	}
	o.Stop()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(waits) }
	for ctx := ctxFor(t); count() < 7 && ctx.Err() == nil; {
		<-timeAfter(5)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return v.Connects() == 2 }); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := len(waits)
	mu.Unlock()
	o.Stop()
	for ctx := ctxFor(t); count() <= n && ctx.Err() == nil; {
		<-timeAfter(5)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for i, w := range want {
		if waits[i] != w*time.Second {
			t.Fatalf("waits %v, want %v s first", waits, want)
		}
	}
	if waits[n] != time.Second {
		t.Fatalf("after a connection the wait is %v, want 1s again (waits %v)", waits[n], waits)
	}
}

func TestBackoffFormula(t *testing.T) {
	for _, tc := range []struct {
		attempt int
		jitter  float64
		want    time.Duration
	}{
		{0, 0, time.Second}, {0, 0.5, 1150 * time.Millisecond}, {1, 0, 2 * time.Second}, {3, 1, 10400 * time.Millisecond},
		{4, 0, 16 * time.Second}, {5, 0, 30 * time.Second}, {50, 0.999, 30*time.Second + 8991*time.Millisecond},
		{-1, 0, time.Second}, {2, 7, 5200 * time.Millisecond},
	} {
		if got := Backoff(tc.attempt, tc.jitter); got != tc.want {
			t.Errorf("Backoff(%d, %v) = %v, want %v", tc.attempt, tc.jitter, got, tc.want)
		}
	}
}

// The daemon answers WebSocket pings while it waits for frames.
func TestAnswersPings(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	o := startOrchestrator(t, fakeorchestrator.Options{})
	startDaemon(t, c, o, nil)
	if err := o.Wait(ctxFor(t), connected); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		ctx, cancel := context.WithTimeout(ctxFor(t), 5*time.Second)
		err := o.Ping(ctx)
		cancel()
		if err != nil {
			t.Fatalf("ping: %v", err)
		}
	}
}

// A failed dial's error (which names the URL) never shows the device key.
func TestDialErrorHidesKey(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	d, err := New(Config{Orchestrator: "ws://127.0.0.1:1", DeviceKey: "dk_secret+key", Service: &Service{Sessions: c.m}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.connect(ctxFor(t), "dk_secret+key")
	if err == nil {
		t.Fatal("dialled a closed port")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("the error shows the key: %v", err)
	}
	if !strings.Contains(err.Error(), "REDACTED") {
		t.Fatalf("the error lost its URL: %v", err)
	}
}
