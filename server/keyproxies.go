package server

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/runner/keyproxy"
)

// keyProxies keep model API keys out of sandboxed agents (the
// driver.KeyProxies each kind's provider wiring is handed): a tool command
// can read its agent's environment (/proc/PID/environ) and configuration
// files, so a sandboxed agent is given a loopback proxy's address and a
// stand-in key, and only the proxy holds the real one. A proxy is started
// per upstream and key, on demand; all share one stand-in token, so one
// key variable of an agent's environment opens every upstream its
// configuration names. Unused, it starts nothing.
type keyProxies struct {
	token   string
	log     *slog.Logger
	started map[string]*keyproxy.Proxy
}

var _ driver.KeyProxies = (*keyProxies)(nil)

func newKeyProxies(log *slog.Logger) *keyProxies {
	return &keyProxies{token: keyproxy.NewToken(), log: log, started: map[string]*keyproxy.Proxy{}}
}

// StandIn is the key every proxy takes.
func (k *keyProxies) StandIn() string { return k.token }

// Behind returns the base URL that reaches upstream with creds (request
// header → real value) added to each request, starting its proxy once.
func (k *keyProxies) Behind(upstream string, creds map[string]string) (string, error) {
	var id strings.Builder
	id.WriteString(upstream)
	for _, h := range slices.Sorted(maps.Keys(creds)) {
		fmt.Fprintf(&id, "\x00%s\x00%s", h, creds[h])
	}
	if p, ok := k.started[id.String()]; ok {
		return p.URL(), nil
	}
	p, err := keyproxy.Start(keyproxy.Config{Upstream: upstream, Credentials: creds, Token: k.token, Logger: k.log})
	if err != nil {
		return "", fmt.Errorf("server: key proxy for %s: %w", upstream, err)
	}
	k.started[id.String()] = p
	k.log.Info("API key kept behind a loopback proxy", "proxy", p.URL(), "upstream", upstream)
	return p.URL(), nil
}

// Close stops every proxy. A nil keyProxies is closed already.
func (k *keyProxies) Close() {
	if k == nil {
		return
	}
	for _, p := range k.started {
		_ = p.Close()
	}
	clear(k.started)
}
