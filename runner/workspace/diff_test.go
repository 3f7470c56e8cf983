package workspace_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/runner/workspace"
)

// A workspace's diff since a snapshot: files added (new, untracked),
// modified and deleted, a name with a space, and a binary file; taking it
// changes no commit.
func TestDiffSinceSnapshot(t *testing.T) {
	m := newManager(t)
	w, err := m.Acquire(ctx(t), "diff")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(w.Path(), name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("keep.txt", "same\n")
	write("edit.txt", "one\n")
	write("gone.txt", "bye\n")
	before, err := w.Snapshot(ctx(t), "before")
	if err != nil {
		t.Fatal(err)
	}
	write("edit.txt", "one\ntwo\n")
	write("new file.txt", "hello\n")
	write("blob.bin", "\x00\x01\x02")
	if err := os.Remove(filepath.Join(w.Path(), "gone.txt")); err != nil {
		t.Fatal(err)
	}
	diff, err := w.Diff(ctx(t), before)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]workspace.FileDiff{}
	var names []string
	for _, f := range diff {
		got[f.Path] = f
		names = append(names, f.Path+" "+f.Status)
	}
	slices.Sort(names)
	want := []string{"blob.bin added", "edit.txt modified", "gone.txt deleted", "new file.txt added"}
	if !slices.Equal(names, want) {
		t.Fatalf("files %q, want %q", names, want)
	}
	if p := got["edit.txt"].Patch; !strings.Contains(p, "+two\n") || !strings.HasPrefix(p, "diff --git a/edit.txt b/edit.txt\n") {
		t.Errorf("edit.txt patch:\n%s", p)
	}
	if p := got["new file.txt"].Patch; !strings.Contains(p, "+hello\n") {
		t.Errorf("new file patch:\n%s", p)
	}
	if p := got["blob.bin"].Patch; !strings.Contains(p, "Binary files") {
		t.Errorf("binary patch:\n%s", p)
	}
	head, err := w.Git(ctx(t), "rev-parse", "HEAD")
	if err != nil || strings.TrimSpace(string(head)) != before {
		t.Fatalf("Diff moved HEAD: %s %v", head, err)
	}
	if again, err := w.Diff(ctx(t), before); err != nil || len(again) != len(diff) {
		t.Fatalf("a second Diff: %d files, %v", len(again), err)
	}
}
