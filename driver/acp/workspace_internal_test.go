package acp

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Writes and reads stay inside the workspace: a path outside it, a
// relative one, or one through a link out of it is refused with an
// *OutsideWorkspaceError, and nothing is written.
func TestWorkspaceRefusesOutside(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	ws := workspace{root: root}
	for _, p := range []string{filepath.Join(outside, "x"), "relative.txt", filepath.Join(root, "..", filepath.Base(outside), "x"),
		filepath.Join(root, "link", "x"), filepath.Join(root, "link", "new", "x")} {
		err := ws.write(p, "no")
		var out *OutsideWorkspaceError
		if !errors.As(err, &out) || !errors.Is(err, ErrOutsideWorkspace) {
			t.Errorf("write %s: %v", p, err)
		}
		if _, err := ws.read(p, nil, nil); !errors.Is(err, ErrOutsideWorkspace) {
			t.Errorf("read %s: %v", p, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("written outside: %v", entries)
	}
	in := filepath.Join(root, "sub", "f.txt")
	if err := ws.write(in, "a\nb\nc\n"); err != nil {
		t.Fatal(err)
	}
	line, limit := 2, 1
	if got, err := ws.read(in, &line, &limit); err != nil || got != "b\n" {
		t.Fatalf("read line 2: %q %v", got, err)
	}
	if _, err := ws.read(filepath.Join(root, "missing"), nil, nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
