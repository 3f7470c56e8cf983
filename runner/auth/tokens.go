package auth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
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
// zero value and nil accept nothing and are Empty. Safe for concurrent use.
type Tokens struct {
	digests [][sha256.Size]byte
	ids     []string
}

// Load collects tokens from the environment, the file and opts.Tokens.
// Finding none is not an error: see Empty and RequireForAddr.
func Load(opts LoadOptions) (*Tokens, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	t := &Tokens{}
	for _, name := range []string{EnvToken, EnvSidecarToken} {
		for i, tok := range strings.Split(getenv(name), ",") {
			if err := t.add(strings.TrimSpace(tok), fmt.Sprintf("%s #%d", name, i+1)); err != nil {
				return nil, err
			}
		}
	}
	if opts.File != "" {
		if err := t.addFile(opts.File); err != nil {
			return nil, err
		}
	}
	for i, tok := range opts.Tokens {
		if tok == "" {
			return nil, &TokenError{Source: fmt.Sprintf("LoadOptions.Tokens[%d]", i), Reason: "empty"}
		}
		if err := t.add(tok, fmt.Sprintf("LoadOptions.Tokens[%d]", i)); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *Tokens) addFile(path string) error {
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
func (t *Tokens) add(tok, source string) error {
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

// Empty reports whether no token is configured.
func (t *Tokens) Empty() bool { return t == nil || len(t.digests) == 0 }

// Len is the number of distinct tokens.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.digests)
}

// IDs are the fingerprints of the configured tokens, in load order.
func (t *Tokens) IDs() []string {
	if t == nil {
		return nil
	}
	return append([]string(nil), t.ids...)
}

// Check reads "Authorization: Bearer <token>" and reports which token it
// carries, by id. Every configured token is compared, in constant time, as
// a fixed-length digest, so neither the position of a match nor a token's
// length shows in the timing. A request with several Authorization headers
// is refused.
func (t *Tokens) Check(r *http.Request) (id string, ok bool) {
	if t.Empty() {
		return "", false
	}
	tok, ok := bearer(r.Header)
	if !ok {
		return "", false
	}
	d := sha256.Sum256([]byte(tok))
	match := -1
	for i := range t.digests {
		eq := subtle.ConstantTimeCompare(d[:], t.digests[i][:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return "", false
	}
	return t.ids[match], true
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
