package auth_test

import (
	"errors"
	"testing"

	"github.com/tetherhq/tether/runner/auth"
)

func TestIsLoopback(t *testing.T) {
	cases := map[string]bool{
		"127.0.0.1:7420":       true,
		"127.8.9.10:1":         true,
		"[::1]:1":              true,
		"::1":                  true,
		"localhost:1":          true,
		"LocalHost:1":          true,
		"localhost":            true,
		"127.0.0.1":            true,
		"[::ffff:127.0.0.1]:1": true,
		"0.0.0.0:1":            false,
		":7420":                false,
		"[::]:1":               false,
		"10.0.0.1:1":           false,
		"192.168.1.2:80":       false,
		"example.com:443":      false,
		"localhost.evil:1":     false,
		"":                     false,
	}
	for addr, want := range cases {
		if got := auth.IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestRequireForAddr(t *testing.T) {
	empty := mustLoad(t, auth.LoadOptions{Getenv: env(nil)})
	toks := mustLoad(t, auth.LoadOptions{Getenv: env(nil), Tokens: []string{tokA}})
	for _, addr := range []string{"127.0.0.1:7420", "[::1]:1", "localhost:1"} {
		if err := auth.RequireForAddr(addr, empty); err != nil {
			t.Errorf("%s without token: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:1", ":7420", "10.0.0.1:1"} {
		err := auth.RequireForAddr(addr, empty)
		var ie *auth.InsecureListenError
		if !errors.Is(err, auth.ErrTokenRequired) || !errors.As(err, &ie) || ie.Addr != addr {
			t.Errorf("%s without token: %v", addr, err)
		}
		if err := auth.RequireForAddr(addr, nil); !errors.Is(err, auth.ErrTokenRequired) {
			t.Errorf("%s with nil tokens: %v", addr, err)
		}
		if err := auth.RequireForAddr(addr, toks); err != nil {
			t.Errorf("%s with a token: %v", addr, err)
		}
	}
}
