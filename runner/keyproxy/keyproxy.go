// Package keyproxy keeps API keys out of agents' reach. It is a reverse
// proxy on loopback: agents get its address as their API's base URL and a
// stand-in token as their key; the proxy checks the stand-in and forwards
// each request upstream with the real key, which never enters an agent's
// environment (where a tool command could read it).
package keyproxy

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// Config says where requests go and which headers carry credentials.
type Config struct {
	// Upstream is the real API's base URL.
	Upstream string
	// Credentials maps a request header (x-api-key, Authorization) to its
	// real value. Agents must send the stand-in token in one of them
	// (Authorization as "Bearer <token>").
	Credentials map[string]string
	// Token is the stand-in key agents send; empty makes a random one.
	// Proxies for several upstreams share one when an agent's single key
	// variable must open each of them.
	Token  string
	Logger *slog.Logger
}

// Proxy is a running key proxy.
type Proxy struct {
	token string
	url   string
	srv   *http.Server
	done  chan struct{}
}

// ErrNoUpstream is returned for an unusable upstream URL.
var ErrNoUpstream = errors.New("keyproxy: upstream must be an http(s) URL")

// Start listens on 127.0.0.1 and serves until Close.
func Start(cfg Config) (*Proxy, error) {
	up, err := url.Parse(cfg.Upstream)
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		return nil, fmt.Errorf("%w: %q", ErrNoUpstream, cfg.Upstream)
	}
	token := cfg.Token
	if token == "" {
		token = NewToken()
	}
	p := &Proxy{token: token, done: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.url = "http://" + ln.Addr().String()
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(up)
			for h, v := range cfg.Credentials {
				if r.Out.Header.Get(h) == "" {
					continue
				}
				if http.CanonicalHeaderKey(h) == "Authorization" {
					v = "Bearer " + v
				}
				r.Out.Header.Set(h, v)
			}
		},
		FlushInterval: -1, // stream server-sent events as they come
	}
	if cfg.Logger != nil {
		rp.ErrorLog = slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)
	}
	p.srv = &http.Server{Handler: p.guard(rp, cfg.Credentials), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// NewToken makes a random stand-in key.
func NewToken() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "tether-proxy-" + hex.EncodeToString(b[:])
}

// URL is the base URL agents use.
func (p *Proxy) URL() string { return p.url }

// Token is the stand-in key agents send.
func (p *Proxy) Token() string { return p.token }

// guard refuses requests without the stand-in token.
func (p *Proxy) guard(next http.Handler, creds map[string]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := false
		for h := range creds {
			v := r.Header.Get(h)
			if http.CanonicalHeaderKey(h) == "Authorization" {
				v = trimBearer(v)
			}
			if v != "" && subtle.ConstantTimeCompare([]byte(v), []byte(p.token)) == 1 {
				ok = true
			}
		}
		if !ok {
			http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"keyproxy: unknown key"}}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func trimBearer(v string) string {
	const prefix = "Bearer "
	if len(v) > len(prefix) && v[:len(prefix)] == prefix {
		return v[len(prefix):]
	}
	return ""
}

// Close stops the proxy and waits for it.
func (p *Proxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if err != nil {
		_ = p.srv.Close()
	}
	<-p.done
	return err
}
