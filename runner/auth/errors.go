package auth

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidToken matches a configured token that cannot be used.
	ErrInvalidToken = errors.New("auth: invalid token")
	// ErrTokenRequired matches a listen address beyond loopback without a
	// token to protect it.
	ErrTokenRequired = errors.New("auth: a token is required to listen beyond loopback")
)

// TokenError is a configured token that was rejected. It names where the
// token came from, never the token itself.
type TokenError struct {
	Source string // "TETHER_AUTH_TOKEN #2", "/etc/tether/tokens:7"
	Reason string
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("auth: token from %s: %s", e.Source, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidToken) true.
func (e *TokenError) Is(target error) bool { return target == ErrInvalidToken }

// InsecureListenError is a non-loopback listen address with no token.
type InsecureListenError struct {
	Addr string
}

func (e *InsecureListenError) Error() string {
	return fmt.Sprintf("auth: refusing to listen on %q without a token: it is not a loopback address (set %s)", e.Addr, EnvToken)
}

// Is makes errors.Is(err, ErrTokenRequired) true.
func (e *InsecureListenError) Is(target error) bool { return target == ErrTokenRequired }
