package workspace

import (
	"context"
	"strings"
)

// FileDiff is one file's change between a snapshot and the work tree.
type FileDiff struct {
	Path string
	// Status is "added", "modified" or "deleted".
	Status string
	// Patch is git's unified diff of the file ("Binary files … differ"
	// for a binary one).
	Patch string
}

// Diff is what changed in the work tree since the snapshot commit since
// (a hash Snapshot returned): every file added, modified or deleted, new
// files included. It takes no snapshot: the work tree is staged in the
// repository's index, which only snapshots read.
func (w *Workspace) Diff(ctx context.Context, since string) ([]FileDiff, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.released {
		return nil, ErrReleased
	}
	if err := w.prepareLocked(ctx); err != nil {
		return nil, err
	}
	w.removeStaleLocks()
	if _, err := w.gitLocked(ctx, "add", "-A"); err != nil {
		return nil, err
	}
	out, err := w.gitLocked(ctx, "-c", "core.quotePath=false", "diff", "--cached", "--no-color", "--no-ext-diff",
		"--no-renames", "--full-index", since, "--")
	if err != nil {
		return nil, err
	}
	return parseDiff(string(out)), nil
}

// parseDiff splits git's unified diff into files. A path is read from the
// ---/+++ lines, which are not ambiguous, or, for a binary file, from the
// header's two equal halves.
func parseDiff(out string) []FileDiff {
	var files []FileDiff
	for _, block := range strings.Split(out, "\ndiff --git ") {
		block = strings.TrimPrefix(block, "diff --git ")
		if strings.TrimSpace(block) == "" {
			continue
		}
		header, _, _ := strings.Cut(block, "\n")
		f := FileDiff{Status: "modified", Patch: "diff --git " + strings.TrimSuffix(block, "\n") + "\n"}
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "new file mode"):
				f.Status = "added"
			case strings.HasPrefix(line, "deleted file mode"):
				f.Status = "deleted"
			case strings.HasPrefix(line, "+++ b/"): // git ends a name with a space with a tab
				f.Path = strings.TrimSuffix(strings.TrimPrefix(line, "+++ b/"), "\t")
			case strings.HasPrefix(line, "--- a/") && f.Path == "":
				f.Path = strings.TrimSuffix(strings.TrimPrefix(line, "--- a/"), "\t")
			}
		}
		if f.Path == "" { // binary: "a/<p> b/<p>"
			half := strings.TrimPrefix(header, "a/")
			if n := len(half); n > 3 {
				f.Path = half[:(n-3)/2]
			}
		}
		files = append(files, f)
	}
	return files
}
