package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/runner/workspace"
)

func newManager(t *testing.T) *workspace.Manager {
	t.Helper()
	base := t.TempDir()
	m, err := workspace.New(filepath.Join(base, "workspaces"), workspace.Options{HomesRoot: filepath.Join(base, "homes")})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func acquire(t *testing.T, m *workspace.Manager, id string) *workspace.Workspace {
	t.Helper()
	w, err := m.Acquire(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Release)
	return w
}

func write(t *testing.T, w *workspace.Workspace, name, content string) {
	t.Helper()
	p := filepath.Join(w.Path(), name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func snapshot(t *testing.T, w *workspace.Workspace, msg string) string {
	t.Helper()
	c, err := w.Snapshot(ctx(t), msg)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 40 {
		t.Fatalf("commit %q is not a hash", c)
	}
	return c
}

func git(t *testing.T, w *workspace.Workspace, args ...string) string {
	t.Helper()
	out, err := w.Git(ctx(t), args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func commits(t *testing.T, w *workspace.Workspace) int {
	t.Helper()
	n, err := strconv.Atoi(git(t, w, "rev-list", "--count", "HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() {
		t.Fatalf("%s is not a directory", path)
	}
	return fi.Mode().Perm()
}
