package auth_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tetherhq/tether/runner/auth"
)

// published is a generated token recorded for a runner on port 7420.
func published(t *testing.T) (records string, token string, remove func()) {
	t.Helper()
	g := mustGenerated(t, t.TempDir())
	records = filepath.Join(t.TempDir(), "runners")
	remove, err := auth.Publish(records, "127.0.0.1:7420", g.File)
	if err != nil {
		t.Fatal(err)
	}
	return records, readToken(t, g.File), remove
}

func TestLocalTokenFound(t *testing.T) {
	records, tok, remove := published(t)
	for _, u := range []string{
		"ws://127.0.0.1:7420/sessions", "ws://localhost:7420/sessions", "ws://[::1]:7420/sessions",
		"wss://127.0.0.1:7420/sessions", "ws://127.0.0.2:7420",
	} {
		got, err := auth.LocalToken(records, u)
		if err != nil || got != tok {
			t.Errorf("%s: %v", u, err)
		}
	}
	// The record holds the file's path, not the token, and is private.
	path := filepath.Join(records, "7420.json")
	data, err := os.ReadFile(path)
	if err != nil || strings.Contains(string(data), tok) || !strings.Contains(string(data), auth.GeneratedTokenFile) {
		t.Fatalf("record %q: %v", data, err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, records: 0o700} {
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v (%v)", p, info.Mode().Perm(), want, err)
		}
	}
	remove()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("record left after remove: %v", err)
	}
	if _, err := auth.LocalToken(records, "ws://127.0.0.1:7420/sessions"); !errors.Is(err, auth.ErrNoLocalToken) {
		t.Fatalf("after remove: %v", err)
	}
}

// No token goes beyond loopback, to another port, or to the port of a
// runner that has ended.
func TestLocalTokenMisses(t *testing.T) {
	records, _, _ := published(t)
	for _, u := range []string{
		"ws://192.0.2.1:7420/sessions", "ws://runner.example:7420/sessions", "ws://127.0.0.1.example:7420",
		"ws://127.0.0.1:7421/sessions", "ws://127.0.0.1/sessions", "not a url", "",
	} {
		tok, err := auth.LocalToken(records, u)
		var ne *auth.NoLocalTokenError
		if tok != "" || !errors.Is(err, auth.ErrNoLocalToken) || !errors.As(err, &ne) || ne.Reason == "" {
			t.Errorf("%q: token %v, %v", u, tok != "", err)
		}
	}
	// A record whose runner has ended (its pid is gone).
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	rec := `{"pid":` + strconv.Itoa(dead.Process.Pid) + `,"addr":"127.0.0.1:7430","token_file":"` + filepath.Join(t.TempDir(), "x") + `"}`
	if err := os.WriteFile(filepath.Join(records, "7430.json"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.LocalToken(records, "ws://127.0.0.1:7430/sessions"); !errors.Is(err, auth.ErrNoLocalToken) || !strings.Contains(err.Error(), "ended") {
		t.Fatalf("dead runner: %v", err)
	}
}

// A record naming a file that is not a generated token makes nothing of it
// a token: the host would otherwise send any file's first line.
func TestLocalTokenRefusesOtherFiles(t *testing.T) {
	records := t.TempDir()
	secret := filepath.Join(t.TempDir(), "id_key")
	if err := os.WriteFile(secret, []byte("-----BEGIN PRIVATE KEY-----\nabc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	remove, err := auth.Publish(records, "127.0.0.1:7440", secret)
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	tok, err := auth.LocalToken(records, "ws://127.0.0.1:7440/sessions")
	if tok != "" || !errors.Is(err, auth.ErrTokenFile) || strings.Contains(err.Error(), "PRIVATE") {
		t.Fatalf("token %v, %v", tok != "", err)
	}
}

// remove deletes only this runner's record: a later runner on the port
// keeps its own.
func TestPublishRemoveKeepsNewerRecord(t *testing.T) {
	records, _, remove := published(t)
	other := mustGenerated(t, t.TempDir())
	if _, err := auth.Publish(records, "[::1]:7420", other.File); err != nil {
		t.Fatal(err)
	}
	remove()
	tok, err := auth.LocalToken(records, "ws://localhost:7420/sessions")
	if err != nil || tok != readToken(t, other.File) {
		t.Fatalf("newer record gone or wrong: %v", err)
	}
	if _, err := auth.Publish(records, "127.0.0.1:7420", "relative/file"); err == nil {
		t.Fatal("a relative token file was recorded")
	}
	if _, err := auth.Publish(records, "no port", other.File); err == nil {
		t.Fatal("an address without a port was recorded")
	}
}

func TestDefaultRecordDir(t *testing.T) {
	run := t.TempDir()
	t.Setenv(auth.EnvRuntimeDir, run)
	if d, err := auth.DefaultRecordDir(); err != nil || d != filepath.Join(run, "tether", "runners") {
		t.Fatalf("%q, %v", d, err)
	}
	cache := t.TempDir()
	t.Setenv(auth.EnvRuntimeDir, "")
	t.Setenv("XDG_CACHE_HOME", cache)
	if d, err := auth.DefaultRecordDir(); err != nil || d != filepath.Join(cache, "tether", "runners") {
		t.Fatalf("%q, %v", d, err)
	}
	// An empty records directory argument means the default.
	g := mustGenerated(t, t.TempDir())
	remove, err := auth.Publish(filepath.Join(cache, "tether", "runners"), "127.0.0.1:7450", g.File)
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	if tok, err := auth.LocalToken("", "ws://127.0.0.1:7450/sessions"); err != nil || tok != readToken(t, g.File) {
		t.Fatalf("default directory: %v", err)
	}
}
