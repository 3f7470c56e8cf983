package server

import (
	"errors"
	"os"
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
	for _, h := range sandboxPolicy(cfg).Hide {
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

// --sandbox-ro paths are made absolute, must exist, and may not show
// agents the runner's token file or TLS files, through a symlink either;
// each reaches every agent's sandbox policy.
func TestSandboxReadOnly(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, d := range []string{"toolchain", "etc-tether"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := Config{DataDir: "d", Sandbox: true, SandboxReadOnly: []string{"toolchain"}}.resolved()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "toolchain"); len(cfg.SandboxReadOnly) != 1 || cfg.SandboxReadOnly[0] != want {
		t.Fatalf("SandboxReadOnly %q", cfg.SandboxReadOnly)
	}
	if got := sandboxPolicy(cfg).ReadOnly; len(got) != 1 || got[0] != filepath.Join(dir, "toolchain") {
		t.Fatalf("the agents' policy reads %q", got)
	}
	for _, link := range []string{"ro-link", "secret-link"} {
		if err := os.Symlink("etc-tether", link); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range map[string]Config{
		"missing": {DataDir: "d", SandboxReadOnly: []string{"nope"}},
		// the sandbox mounts what a link points to
		"link to the token's directory": {DataDir: "d", SandboxReadOnly: []string{"ro-link"}, Auth: auth.LoadOptions{File: "etc-tether/tokens"}},
		"token file through a link":     {DataDir: "d", SandboxReadOnly: []string{"etc-tether"}, Auth: auth.LoadOptions{File: "secret-link/tokens"}},
		"token file":                    {DataDir: "d", SandboxReadOnly: []string{"etc-tether"}, Auth: auth.LoadOptions{File: "etc-tether/tokens"}},
		"tls key":                       {DataDir: "d", SandboxReadOnly: []string{dir}, TLSCert: "c.pem", TLSKey: "etc-tether/k.pem"},
	} {
		var ce *ConfigError
		_, err := c.resolved()
		if !errors.As(err, &ce) || ce.Field != "SandboxReadOnly" {
			t.Errorf("%s: %v", name, err)
		}
	}
}
