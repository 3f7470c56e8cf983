package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/frontend/protov1"
	"github.com/tetherhq/tether/runner"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/workspace"
)

// inproc is a runner in this process on loopback, without a sandbox.
type inproc struct {
	url   string
	r     *runner.Runner
	log   *eventlog.Log
	srv   *httptest.Server
	dir   string
	close func()
}

func startInproc(cli string, env map[string]string) (*inproc, error) {
	dir, err := os.MkdirTemp("", "runnerbench-")
	if err != nil {
		return nil, err
	}
	elog, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		return nil, err
	}
	ws, err := workspace.New(filepath.Join(dir, "ws"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		return nil, err
	}
	full := map[string]string{"PATH": os.Getenv("PATH")}
	for k, v := range env {
		full[k] = v
	}
	drv, err := claudecli.New(claudecli.Config{CLIPath: cli, Env: full, ShutdownGrace: time.Second})
	if err != nil {
		return nil, err
	}
	r, err := runner.New(runner.Config{Log: elog, Workspaces: ws, Driver: drv, GracePeriod: time.Minute})
	if err != nil {
		return nil, err
	}
	srv := httptest.NewServer(&protov1.Server{Runner: r})
	ip := &inproc{url: "ws" + strings.TrimPrefix(srv.URL, "http"), r: r, log: elog, srv: srv, dir: dir}
	ip.close = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.Shutdown(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "runnerbench: shutdown:", err)
		}
		srv.Close()
		elog.Close()
		os.RemoveAll(dir)
	}
	return ip, nil
}
