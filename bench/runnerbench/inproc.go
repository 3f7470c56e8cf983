package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/frontend/protov1"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/eventlog"
)

// inproc is a runner in this process on loopback, without a sandbox.
type inproc struct {
	url   string
	core  *runnertest.Core
	log   *eventlog.Bolt
	srv   *httptest.Server
	dir   string
	close func()
}

func startInproc(cli string, env map[string]string) (*inproc, error) {
	dir, err := os.MkdirTemp("", "runnerbench-")
	if err != nil {
		return nil, err
	}
	full := map[string]string{"PATH": os.Getenv("PATH")}
	for k, v := range env {
		full[k] = v
	}
	core, err := runnertest.NewCore(dir, claudecli.Config{CLIPath: cli, Env: full, ShutdownGrace: time.Second})
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := httptest.NewServer(&protov1.Server{Sessions: core.Sessions, GracePeriod: time.Minute, Logger: logger})
	ip := &inproc{url: "ws" + strings.TrimPrefix(srv.URL, "http"), core: core, log: core.Log, srv: srv, dir: dir}
	ip.close = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := core.Close(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "runnerbench: shutdown:", err)
		}
		srv.Close()
		os.RemoveAll(dir)
	}
	return ip, nil
}
