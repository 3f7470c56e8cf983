package claudecli

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A session's cwd is a directory inside its workspace: a link out of it, a
// file, a missing directory or a path that climbs out is refused as an
// invalid option, before any agent starts.
func TestWorkingDir(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(ws, "src", "app"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ws, "src"), filepath.Join(ws, "inside")); err != nil {
		t.Fatal(err)
	}
	for cwd, want := range map[string]string{
		"": ws, "src/app": filepath.Join(ws, "src", "app"), "inside/app": filepath.Join(ws, "src", "app"),
	} {
		if got, err := workingDir(ws, cwd); err != nil || got != want {
			t.Errorf("workingDir(%q) = %q, %v; want %q", cwd, got, err, want)
		}
	}
	for _, cwd := range []string{"escape", "escape/app", "file", "missing"} {
		if got, err := workingDir(ws, cwd); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("workingDir(%q) = %q, %v; want an invalid option", cwd, got, err)
		}
	}
	for _, cwd := range []string{"/etc", "..", "../ws", "a/../../x"} {
		if _, err := ParseOptions([]byte(`{"cwd":"` + cwd + `"}`)); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("cwd %q parsed: %v", cwd, err)
		}
	}
}

// Whatever a host sends as session_opts, ParseOptions answers without
// panicking, and what it accepts keeps the agent in its workspace.
func FuzzParseOptions(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `{"cwd":"src/app","add_dirs":["lib"]}`, `{"cwd":"../x"}`, `{"cwd":"/"}`,
		`{"model":"--flag"}`, `{"permission_mode":"plan","max_turns":3}`, `{"cwd":"a/../../b"}`, `[1]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		o, err := ParseOptions(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("error %v does not match ErrInvalidOptions", err)
			}
			return
		}
		for _, d := range append([]string{o.Cwd}, o.AddDirs...) {
			if d != "" && !filepath.IsLocal(d) {
				t.Fatalf("accepted %q, outside the workspace", d)
			}
		}
		if !permissionModes[o.PermissionMode] || o.MaxTurns < 0 || o.MaxBudgetUSD < 0 {
			t.Fatalf("accepted %+v", o)
		}
	})
}
