package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/runner/auth"
)

// tether run --runner picks --runner-token, then TETHER_AUTH_TOKEN, then
// the token a runner on this machine generated for the URL's port.
func TestRunnerTokenPrecedence(t *testing.T) {
	run := t.TempDir()
	t.Setenv(auth.EnvRuntimeDir, run)
	g, err := auth.LoadOrGenerate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	remove, err := auth.Publish(filepath.Join(run, "tether", "runners"), "127.0.0.1:7499", g.File)
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	data, _ := os.ReadFile(g.File)
	local := strings.TrimSpace(string(data))
	const url = "ws://127.0.0.1:7499/sessions"
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == auth.EnvToken {
				return v
			}
			return ""
		}
	}
	var stderr strings.Builder
	for _, c := range []struct{ flag, env, url, want string }{
		{"flag-token-0123456789", "env-token-0123456789", url, "flag-token-0123456789"},
		{"", "env-token-0123456789", url, "env-token-0123456789"},
		{"", "", url, local},
		{"", "", "ws://localhost:7499/sessions", local},
		{"", "", "ws://127.0.0.1:7498/sessions", ""}, // another port
		{"", "", "ws://192.0.2.1:7499/sessions", ""}, // not this machine
	} {
		if got := runnerToken(c.flag, c.url, env(c.env), &stderr); got != c.want {
			t.Errorf("flag %q env %q url %s: got %q, want %q", c.flag, c.env, c.url, got, c.want)
		}
	}
	if stderr.Len() != 0 {
		t.Fatalf("a miss is silent (the runner's 401 says it), got %q", stderr.String())
	}
	// A token file found but unusable is said, without its content.
	if err := os.Chmod(g.File, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := runnerToken("", url, env(""), &stderr); got != "" || !strings.Contains(stderr.String(), "may be read by others") || strings.Contains(stderr.String(), local) {
		t.Fatalf("got %q, stderr %q", got, stderr.String())
	}
}
