package auth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Environment variables that hold tokens. Each may hold several tokens
// separated by commas, so a new token can be added before the old one is
// removed. SIDECAR_AUTH_TOKEN is the name the original sidecar design used.
const (
	EnvToken        = "TETHER_AUTH_TOKEN"
	EnvSidecarToken = "SIDECAR_AUTH_TOKEN"
)

// MinTokenLength is the shortest token accepted, in bytes.
const MinTokenLength = 16

// LoadOptions say where tokens come from. Every source is used; duplicates
// count once.
type LoadOptions struct {
	// Getenv reads the environment (EnvToken and EnvSidecarToken); nil
	// means os.Getenv.
	Getenv func(key string) string
	// File, when set, holds one token per line; blank lines and lines
	// starting with '#' are ignored. A missing file is an error.
	File string
	// Tokens are given directly (flags, embedding programs).
	Tokens []string
}

// Tokens is the set of accepted tokens, kept only as SHA-256 digests. The
// zero value and nil accept nothing and are Empty. Safe for concurrent use:
// Replace swaps the set while requests are checked against it, and ends
// the requests of every token it drops (see Middleware).
type Tokens struct {
	set atomic.Pointer[tokenSet]

	mu   sync.Mutex
	live map[string]map[*liveRequest]struct{} // requests in flight, by token id
}

// tokenSet is one loaded set of tokens; never changed once published.
type tokenSet struct {
	digests [][sha256.Size]byte
	ids     []string
}

// liveRequest is a request Middleware let through, ended with
// ErrTokenRevoked if its token is dropped while it runs.
type liveRequest struct{ end context.CancelCauseFunc }

// Load collects tokens from the environment, the file and opts.Tokens.
// Finding none is not an error: see Empty and RequireForAddr.
func Load(opts LoadOptions) (*Tokens, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	set := &tokenSet{}
	for _, name := range []string{EnvToken, EnvSidecarToken} {
		for i, tok := range strings.Split(getenv(name), ",") {
			if err := set.add(strings.TrimSpace(tok), fmt.Sprintf("%s #%d", name, i+1)); err != nil {
				return nil, err
			}
		}
	}
	if opts.File != "" {
		if err := set.addFile(opts.File); err != nil {
			return nil, err
		}
	}
	for i, tok := range opts.Tokens {
		if tok == "" {
			return nil, &TokenError{Source: fmt.Sprintf("LoadOptions.Tokens[%d]", i), Reason: "empty"}
		}
		if err := set.add(tok, fmt.Sprintf("LoadOptions.Tokens[%d]", i)); err != nil {
			return nil, err
		}
	}
	return newTokens(set), nil
}

func newTokens(set *tokenSet) *Tokens {
	t := &Tokens{}
	t.set.Store(set)
	return t
}

func (t *tokenSet) addFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("auth: token file: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := t.add(line, fmt.Sprintf("%s:%d", path, n)); err != nil {
			return err
		}
	}
	return sc.Err()
}

// add validates and stores one token; an empty one (between commas, an
// unset variable) is skipped.
func (t *tokenSet) add(tok, source string) error {
	if tok == "" {
		return nil
	}
	if len(tok) < MinTokenLength {
		return &TokenError{Source: source, Reason: fmt.Sprintf("shorter than %d bytes", MinTokenLength)}
	}
	for _, c := range []byte(tok) {
		if c <= ' ' || c == 0x7f {
			return &TokenError{Source: source, Reason: "contains a space or control character"}
		}
	}
	d := sha256.Sum256([]byte(tok))
	for _, have := range t.digests {
		if have == d {
			return nil
		}
	}
	t.digests = append(t.digests, d)
	t.ids = append(t.ids, tokenID(tok))
	return nil
}

// tokenID is a short fingerprint of a token for logs and limits. It is
// domain-separated from the digests Check compares, and too short to
// confirm a guess of a high-entropy token.
func tokenID(tok string) string {
	sum := sha256.Sum256([]byte("tether-auth-token-id\x00" + tok))
	return hex.EncodeToString(sum[:4])
}

// current is the set in force; nil for a nil or zero Tokens.
func (t *Tokens) current() *tokenSet {
	if t == nil {
		return nil
	}
	return t.set.Load()
}

// Empty reports whether no token is configured.
func (t *Tokens) Empty() bool { return t.Len() == 0 }

// Len is the number of distinct tokens.
func (t *Tokens) Len() int {
	if set := t.current(); set != nil {
		return len(set.digests)
	}
	return 0
}

// IDs are the fingerprints of the configured tokens, in load order.
func (t *Tokens) IDs() []string {
	if set := t.current(); set != nil {
		return slices.Clone(set.ids)
	}
	return nil
}

// Replace makes with's tokens the ones t accepts (with itself is left as
// it was) and ends, with ErrTokenRevoked, every request Middleware let
// through on a token that is no longer among them: an operator rotating
// or revoking a token does not have to restart the runner, and a revoked
// token's open streams and WebSockets close at once. It returns the ids
// of the tokens dropped.
func (t *Tokens) Replace(with *Tokens) (revoked []string) {
	next := with.current()
	if next == nil {
		next = &tokenSet{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range t.IDs() {
		if !slices.Contains(next.ids, id) {
			revoked = append(revoked, id)
		}
	}
	t.set.Store(next)
	for _, id := range revoked {
		for req := range t.live[id] {
			req.end(ErrTokenRevoked)
		}
		delete(t.live, id)
	}
	return revoked
}

// admit records a request let through on token id until done, so that
// Replace can end it. ok is false if id was dropped meanwhile (between the
// check and now): the request must be refused.
func (t *Tokens) admit(id string, end context.CancelCauseFunc) (done func(), ok bool) {
	req := &liveRequest{end: end}
	t.mu.Lock()
	defer t.mu.Unlock()
	if set := t.current(); set == nil || !slices.Contains(set.ids, id) {
		return nil, false
	}
	if t.live == nil {
		t.live = map[string]map[*liveRequest]struct{}{}
	}
	if t.live[id] == nil {
		t.live[id] = map[*liveRequest]struct{}{}
	}
	t.live[id][req] = struct{}{}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.live[id], req)
		if len(t.live[id]) == 0 {
			delete(t.live, id)
		}
	}, true
}

// Check reads "Authorization: Bearer <token>" and reports which token it
// carries, by id. Every configured token is compared, in constant time, as
// a fixed-length digest, so neither the position of a match nor a token's
// length shows in the timing. A request with several Authorization headers
// is refused.
func (t *Tokens) Check(r *http.Request) (id string, ok bool) {
	set := t.current()
	if set == nil || len(set.digests) == 0 {
		return "", false
	}
	tok, ok := bearer(r.Header)
	if !ok {
		return "", false
	}
	d := sha256.Sum256([]byte(tok))
	match := -1
	for i := range set.digests {
		eq := subtle.ConstantTimeCompare(d[:], set.digests[i][:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return "", false
	}
	return set.ids[match], true
}

// bearer extracts the token of a single "Bearer" Authorization header; the
// scheme is case-insensitive (RFC 7235).
func bearer(h http.Header) (string, bool) {
	values := h.Values("Authorization")
	if len(values) != 1 {
		return "", false
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", false
	}
	return tok, true
}
