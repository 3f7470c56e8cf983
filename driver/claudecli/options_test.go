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
