package protov1_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/frontend/protov1"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/runner"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/workspace"
)

func TestMain(m *testing.M) {
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockclaude.Main())
	}
	goleak.VerifyTestMain(m)
}

// testRunner is a runner on loopback whose agent is the mock CLI.
type testRunner struct {
	t      *testing.T
	url    string
	runner *runner.Runner
	log    *eventlog.Log
	root   string
}

func startRunner(t *testing.T, scenario string, grace time.Duration) *testRunner {
	t.Helper()
	dir := t.TempDir()
	elog, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.New(filepath.Join(dir, "ws"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		t.Fatal(err)
	}
	drv, err := claudecli.New(claudecli.Config{CLIPath: os.Args[0], ShutdownGrace: 500 * time.Millisecond, Env: map[string]string{
		mockclaude.EnvMain: "1", mockclaude.EnvScenario: scenario, mockclaude.EnvDelayMS: "5",
		"GORACE": "atexit_sleep_ms=0", "PATH": os.Getenv("PATH"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{Log: elog, Workspaces: ws, Driver: drv, GracePeriod: grace})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&protov1.Server{Runner: r, MaxFrameSize: 1 << 20, PingInterval: time.Second})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := r.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		srv.Close()
		elog.Close()
	})
	return &testRunner{t: t, url: "ws" + strings.TrimPrefix(srv.URL, "http"), runner: r, log: elog, root: dir}
}

// seedClient knows only the seed's frame tables: JSON objects with a type.
type seedClient struct {
	t  *testing.T
	ws *websocket.Conn
}

func (tr *testRunner) dial() *seedClient {
	tr.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, tr.url, nil)
	if err != nil {
		tr.t.Fatal(err)
	}
	ws.SetReadLimit(64 << 20)
	tr.t.Cleanup(func() { ws.CloseNow() })
	return &seedClient{t: tr.t, ws: ws}
}

func (c *seedClient) send(v any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	c.sendRaw(string(b))
}

func (c *seedClient) sendRaw(s string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *seedClient) next() map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, data, err := c.ws.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("frame %s: %v", data, err)
	}
	return m
}

// until reads frames up to the first of type typ.
func (c *seedClient) until(typ string) []map[string]any {
	c.t.Helper()
	var got []map[string]any
	for {
		f := c.next()
		got = append(got, f)
		if f["type"] == typ {
			return got
		}
	}
}
