package shim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An artifact's content is read from the workspace only: by a path
// relative to it or absolute inside it, never through ".." or a symbolic
// link out of it, and only a regular file of text up to
// MaxArtifactContent.
func TestArtifactContent(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "src"), 0o755))
	must(os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte("package main\n"), 0o644))
	must(os.WriteFile(filepath.Join(base, "secret.txt"), []byte("outside\n"), 0o644))
	must(os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(ws, "link.txt")))
	must(os.WriteFile(filepath.Join(ws, "blob.bin"), []byte{0xff, 0xfe, 0x00}, 0o644))
	must(os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("x", MaxArtifactContent+1)), 0o644))
	for _, c := range []struct {
		path string
		want string
		ok   bool
	}{
		{"src/main.go", "package main\n", true},
		{filepath.Join(ws, "src", "main.go"), "package main\n", true},
		{filepath.Join(base, "secret.txt"), "", false},
		{"../secret.txt", "", false},
		{"link.txt", "", false},
		{"src", "", false},
		{"blob.bin", "", false},
		{"big.txt", "", false},
		{"missing.txt", "", false},
	} {
		got, ok, why := artifactContent(ws, c.path)
		if got != c.want || ok != c.ok || (!ok && why == "") {
			t.Errorf("%s: %q, %v (%s); want %q, %v", c.path, got, ok, why, c.want, c.ok)
		}
	}
	if _, ok, _ := artifactContent("", "src/main.go"); ok {
		t.Error("read without a workspace")
	}
}
