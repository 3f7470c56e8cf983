package codex

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/internal/agentproc"
)

// With a home, HOME and CODEX_HOME point into it (overriding Env), and a
// home inside TMPDIR gets a TMPDIR of its own, which Codex's sandbox helper
// needs; without a home, Env is the environment unchanged.
func TestEnviron(t *testing.T) {
	tmp := t.TempDir()
	base := []string{"PATH=/bin", "HOME=/elsewhere", "CODEX_HOME=/elsewhere/.codex", "TMPDIR=" + tmp, "OPENAI_API_KEY=k"}
	d := &Driver{cfg: driver.Config{Env: base}}
	env, err := d.environ("")
	if err != nil || !slices.Equal(env, base) {
		t.Errorf("no home: %q, %v", env, err)
	}
	home := filepath.Join(tmp, "home")
	env, err = d.environ(home)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"HOME": home, "CODEX_HOME": filepath.Join(home, ".codex"), "TMPDIR": filepath.Join(home, ".tmp"),
		"PATH": "/bin", "OPENAI_API_KEY": "k"}
	got := agentproc.EnvMap(env)
	if len(env) != len(want) {
		t.Errorf("env %q", env)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	outside := t.TempDir()
	d.cfg.Env = []string{"TMPDIR=" + filepath.Join(outside, "t")}
	env, err = d.environ(filepath.Join(outside, "h"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := agentproc.LookupEnv(env, "TMPDIR"); v != filepath.Join(outside, "t") {
		t.Errorf("a TMPDIR that does not hold the home was changed to %q", v)
	}
}
