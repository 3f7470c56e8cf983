package server

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/tetherhq/tether/metrics"
	"github.com/tetherhq/tether/runner/auth"
)

// serveMetrics serves /metrics on cfg.MetricsAddr, without
// authentication, until stop is called; with no MetricsAddr it does
// nothing (the main listener serves /metrics behind the hosts' tokens).
// On loopback it answers only loopback Host names, as the main listener
// does: without a token, that is all that keeps a page on a name rebound
// to 127.0.0.1 from reading the runner's metrics.
func serveMetrics(cfg Config, m *metrics.Metrics, log *slog.Logger) (stop func(), err error) {
	if cfg.MetricsAddr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("server: metrics listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	addr := ln.Addr().String()
	var h http.Handler = mux
	if auth.IsLoopback(addr) {
		h = auth.LoopbackHosts(log, h)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: httpErrorLog(log)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener failed", "addr", ln.Addr().String(), "err", err)
		}
	}()
	log.Info("metrics listening", "addr", addr)
	if cfg.MetricsReady != nil {
		cfg.MetricsReady(addr)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		<-done
	}, nil
}

// httpErrorLog routes net/http's own complaints (TLS handshakes, bad
// requests) through the runner's logger, so even they keep its format.
func httpErrorLog(log *slog.Logger) *stdlog.Logger {
	return slog.NewLogLogger(log.Handler(), slog.LevelWarn)
}
