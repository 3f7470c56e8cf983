package server

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/tetherhq/tether/runner/auth"
)

// Every path of a Config is absolute after resolved, so the sandbox, which
// takes only absolute paths, gets them: with "tether-data" as it was given,
// every init failed with `policy Hide: "tether-data/workspaces" is not
// absolute`.
func TestResolvedPathsAreAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg, err := Config{DataDir: "tether-data", CLIPath: "bin/claude", TLSCert: "c.pem", TLSKey: "k.pem",
		RecordDir: "rec", Sandbox: true, Auth: auth.LoadOptions{File: "tokens"}}.resolved()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		cfg.DataDir: "tether-data", cfg.WorkspaceRoot: "tether-data/workspaces", cfg.CLIPath: "bin/claude",
		cfg.TLSCert: "c.pem", cfg.TLSKey: "k.pem", cfg.RecordDir: "rec", cfg.Auth.File: "tokens",
	}
	for got, rel := range want {
		if got != filepath.Join(dir, rel) {
			t.Errorf("%s resolved to %s", rel, got)
		}
	}
	for _, h := range driverConfig(cfg, nil, nil).Sandbox.Hide {
		if !filepath.IsAbs(h) {
			t.Errorf("sandbox hides %q, not absolute", h)
		}
	}
	if cfg.Addr != DefaultAddr {
		t.Errorf("Addr %q", cfg.Addr)
	}
	// A bare CLI name is looked up on PATH later, not made a path here.
	if cfg, _ := (Config{DataDir: "d", CLIPath: "claude"}).resolved(); cfg.CLIPath != "claude" {
		t.Errorf("bare name became %q", cfg.CLIPath)
	}
}

func TestResolvedRefuses(t *testing.T) {
	for name, c := range map[string]Config{
		"no data":    {},
		"cert alone": {DataDir: "d", TLSCert: "c.pem"},
		"key alone":  {DataDir: "d", TLSKey: "k.pem"},
		"env value":  {DataDir: "d", AgentEnv: []string{"A=b"}},
		"env empty":  {DataDir: "d", AgentEnv: []string{""}},
	} {
		var ce *ConfigError
		if _, err := c.resolved(); !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ce) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
