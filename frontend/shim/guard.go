package shim

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/tetherhq/tether/runner/auth"
)

// Who may drive the shim. Its backend calls it over loopback, with JSON
// bodies and no browser headers; a web page the user has open can reach
// loopback too, and must not start runs, answer decisions or read the
// stream. docs/shim.md ("Security") says what is refused and why.

// EnvToken is the environment variable that holds the shim's token (the
// bootstrap's shimToken is the other place to give it).
const EnvToken = "TETHER_SHIM_TOKEN"

// DefaultMaxSubscribers is how many WS /events clients a shim serves at
// once unless Config.MaxSubscribers says otherwise. Its backend holds one.
const DefaultMaxSubscribers = 64

var (
	// ErrTokenRequired matches a listen address beyond loopback without
	// a token to protect it.
	ErrTokenRequired = errors.New("shim: a token is required to listen beyond loopback")
	// ErrTokenConflict matches a token given twice, differently.
	ErrTokenConflict = errors.New("shim: two different tokens")
)

// InsecureListenError is a listen host beyond loopback with no token.
type InsecureListenError struct{ Host string }

func (e *InsecureListenError) Error() string {
	return fmt.Sprintf("shim: refusing to listen on %s without a token: it is not a loopback address, so any machine "+
		"that reaches it could drive the agent (set %s, or shimToken in AGENT_BOOTSTRAP; the backend sends it as "+
		"Authorization: Bearer <token>)", e.Host, EnvToken)
}

// Is makes errors.Is(err, ErrTokenRequired) true.
func (e *InsecureListenError) Is(target error) bool { return target == ErrTokenRequired }

// ResolveToken is the shim's token: the bootstrap's shimToken or env (the
// value of EnvToken), which must agree when both are set, checked as the
// runner checks its tokens (auth.MinTokenLength bytes at least, no space
// or control character). "" is no token; source names where it came from.
func ResolveToken(boot Bootstrap, env string) (token, source string, err error) {
	switch {
	case boot.ShimToken != "" && env != "" && boot.ShimToken != env:
		return "", "", fmt.Errorf("%w: AGENT_BOOTSTRAP's shimToken and %s differ; give one", ErrTokenConflict, EnvToken)
	case boot.ShimToken != "":
		token, source = boot.ShimToken, "AGENT_BOOTSTRAP shimToken"
	case env != "":
		token, source = env, EnvToken
	default:
		return "", "", nil
	}
	if _, err := loadToken(token, source); err != nil {
		return "", "", err
	}
	return token, source, nil
}

// loadToken is token as the runner's token set, or an *auth.TokenError
// naming source (never the token).
func loadToken(token, source string) (*auth.Tokens, error) {
	tokens, err := auth.Load(auth.LoadOptions{Getenv: func(string) string { return "" }, Tokens: []string{token}})
	var bad *auth.TokenError
	if errors.As(err, &bad) {
		return nil, &auth.TokenError{Source: source, Reason: bad.Reason}
	}
	return tokens, err
}

// CheckListen refuses a listen host beyond loopback without a token.
func CheckListen(host, token string) error {
	if token == "" && !auth.IsLoopback(host) {
		return &InsecureListenError{Host: host}
	}
	return nil
}

// guard refuses, before any handler runs: a Host that is not a loopback
// name or the shim's own address (403: DNS rebinding), a request from a
// web page (403: an Origin header, or Sec-Fetch-Site other than none), a
// request without the token when there is one (401), and a body that is
// not declared application/json (415: a page can send text/plain without
// a preflight). Each refusal is logged, never what a request carried.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, why := s.refusal(r)
		if status == 0 {
			next.ServeHTTP(w, r)
			return
		}
		s.log.Warn("request refused", "status", status, "reason", why, "method", r.Method, "path", r.URL.Path,
			"host", r.Host, "remote", r.RemoteAddr)
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="tether-shim"`)
		}
		w.Header().Set("Cache-Control", "no-store")
		detail(w, status, why)
	})
}

func (s *Server) refusal(r *http.Request) (int, string) {
	if !s.ownHost(r) {
		return http.StatusForbidden, fmt.Sprintf("Host %q is not this shim's: it answers loopback names (localhost, "+
			"127.0.0.0/8, ::1) and the address it listens on", r.Host)
	}
	if _, fromPage := r.Header["Origin"]; fromPage {
		return http.StatusForbidden, "a request from a web page (it has an Origin header) is refused: the shim is driven by its backend"
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "none" {
		return http.StatusForbidden, "a request from a web page (Sec-Fetch-Site: " + site + ") is refused: the shim is driven by its backend"
	}
	if s.tokens != nil && !s.authorized(r) {
		msg := "this shim requires its token: send Authorization: Bearer <token>"
		if r.URL.Path == "/events" {
			msg += " (or ?token=<token> on /events)"
		}
		return http.StatusUnauthorized, msg
	}
	if ct := r.Header.Get("Content-Type"); (r.ContentLength != 0 || ct != "") && !isJSON(ct) {
		return http.StatusUnsupportedMediaType, fmt.Sprintf("a request body must be Content-Type: application/json (got %q)", ct)
	}
	return 0, ""
}

// ownHost says whether the request's Host names this shim: a loopback
// name, the host it was told it listens on, or the address the
// connection came in on (a shim listening on every interface is reached
// at one of its addresses). An attacker's name pointed at this machine
// is none of these.
func (s *Server) ownHost(r *http.Request) bool {
	if auth.IsLoopback(r.Host) {
		return true
	}
	host := bareHost(r.Host)
	if host == "" {
		return false
	}
	if s.listenHost != "" && strings.EqualFold(host, s.listenHost) {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	at, err := netip.ParseAddrPort(local.String())
	return err == nil && at.Addr().Unmap() == ip.Unmap() && !ip.IsUnspecified()
}

// bareHost is a Host or listen host without its port and brackets; an
// unspecified address (every interface) names no host.
func bareHost(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		return ""
	}
	return host
}

// authorized says whether r carries the token: as a bearer, or on WS
// /events (whose browser clients cannot set headers, and whose other
// clients may not) as ?token=. Compared in constant time.
func (s *Server) authorized(r *http.Request) bool {
	if _, ok := s.tokens.Check(r); ok {
		return true
	}
	tok := r.URL.Query().Get("token")
	if r.URL.Path != "/events" || tok == "" {
		return false
	}
	_, ok := s.tokens.Check(&http.Request{Header: http.Header{"Authorization": {"Bearer " + tok}}})
	return ok
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// subscribe takes one of the WS /events places; false when all are taken.
func (s *Server) subscribe() bool {
	if s.subscribers.Add(1) > int64(s.cfg.MaxSubscribers) {
		s.subscribers.Add(-1)
		return false
	}
	return true
}

func (s *Server) unsubscribe() { s.subscribers.Add(-1) }

// tooManySubscribers answers a WS /events client past the cap.
func (s *Server) tooManySubscribers(w http.ResponseWriter, r *http.Request) {
	s.log.Warn("event stream refused: too many", "max", s.cfg.MaxSubscribers, "remote", r.RemoteAddr)
	w.Header().Set("Retry-After", "1")
	detail(w, http.StatusServiceUnavailable, "too many event streams: this shim serves "+strconv.Itoa(s.cfg.MaxSubscribers)+" at once")
}
