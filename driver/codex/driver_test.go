package codex_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/codex"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// fakeCLI writes an executable that prints version for --version.
func fakeCLI(t *testing.T, version string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+version+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewFindsAndChecksTheCLI(t *testing.T) {
	env := []string{"PATH=/usr/bin:/bin"}
	if _, err := codex.New(driver.Config{CLIPath: filepath.Join(t.TempDir(), "codex"), Env: env}); !errors.Is(err, driver.ErrCLINotFound) {
		t.Errorf("a missing CLI: %v, want ErrCLINotFound", err)
	}
	if _, err := codex.New(driver.Config{Env: []string{"PATH=" + t.TempDir()}}); !errors.Is(err, driver.ErrCLINotFound) {
		t.Errorf("no codex on the Env's PATH: %v, want ErrCLINotFound", err)
	}
	old := fakeCLI(t, "codex-cli 0.1.0")
	_, err := codex.New(driver.Config{CLIPath: old, Env: env})
	var ve *driver.VersionError
	if !errors.As(err, &ve) || ve.Found != "codex-cli 0.1.0" || ve.Tested != codex.TestedVersion || !errors.Is(err, driver.ErrUntestedVersion) {
		t.Errorf("an untested version: %v", err)
	}
	d, err := codex.New(driver.Config{CLIPath: old, Env: env, AllowUntestedVersion: true})
	if err != nil || d.Version() != "codex-cli 0.1.0" {
		t.Errorf("AllowUntestedVersion: %v", err)
	}
	// On the Env's PATH, by name.
	pinned := fakeCLI(t, codex.TestedVersion)
	d, err = codex.New(driver.Config{Env: []string{"PATH=" + filepath.Dir(pinned)}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Name() != "codex" {
		t.Errorf("Name %q", d.Name())
	}
	c := d.Capabilities()
	if !c.Resume || !c.Fork || !c.Steer || !c.Diff || !c.Questions || c.Pause || c.Rewind ||
		!slices.Equal(c.Scopes, []agent.Scope{agent.ScopeOnce, agent.ScopeSession}) {
		t.Errorf("Capabilities %+v", c)
	}
}

// HomeFiles are written under the home before the start (0600, parents
// 0700), and one that would leave the home fails the start.
func TestHomeFiles(t *testing.T) {
	bin := testenv.RequireCodexCLI(t)
	home := t.TempDir()
	env, err := testenv.CodexEnv(home, "http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	d, err := codex.New(driver.Config{CLIPath: bin, Env: env, HomeFiles: map[string][]byte{"deep/er/conf.toml": []byte("x = 1\n")}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Start(context.Background(), agent.StartRequest{Workspace: t.TempDir(), Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{"deep/er/conf.toml": 0o600, "deep/er": 0o700, "deep": 0o700} {
		fi, err := os.Stat(filepath.Join(home, path))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want %v", path, fi.Mode().Perm(), err, mode)
		}
	}
	bad, err := codex.New(driver.Config{CLIPath: bin, Env: env, HomeFiles: map[string][]byte{"../escape": nil}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Start(context.Background(), agent.StartRequest{Workspace: t.TempDir(), Home: home}); err == nil {
		t.Error("a home file outside the home was written")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(home), "escape")); !os.IsNotExist(err) {
		t.Errorf("escape: %v", err)
	}
}
