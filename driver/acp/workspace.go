package acp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutsideWorkspace matches an *OutsideWorkspaceError.
var ErrOutsideWorkspace = errors.New("acp: path outside the workspace")

// OutsideWorkspaceError refuses an agent's file request for a path that is
// not in the session's workspace (after symbolic links are followed).
type OutsideWorkspaceError struct {
	Path      string
	Workspace string
}

func (e *OutsideWorkspaceError) Error() string {
	return fmt.Sprintf("acp: %s is outside the workspace %s", e.Path, e.Workspace)
}

func (e *OutsideWorkspaceError) Is(target error) bool { return target == ErrOutsideWorkspace }

// workspace answers fs/* requests inside one directory.
type workspace struct{ root string }

// resolve is path made absolute and checked: it, or for a file yet to be
// made its nearest existing parent, must lie in the workspace once links
// are resolved.
func (w workspace) resolve(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", &OutsideWorkspaceError{Path: path, Workspace: w.root}
	}
	root, err := filepath.EvalSymlinks(w.root)
	if err != nil {
		return "", fmt.Errorf("acp: workspace: %w", err)
	}
	clean := filepath.Clean(path)
	existing, rest := clean, ""
	for {
		real, err := filepath.EvalSymlinks(existing)
		if err == nil {
			if !within(filepath.Join(real, rest), root) {
				return "", &OutsideWorkspaceError{Path: path, Workspace: w.root}
			}
			return clean, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("acp: %w", err)
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return "", &OutsideWorkspaceError{Path: path, Workspace: w.root}
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
}

// read is a file's text, from line (1-based) for limit lines when set.
func (w workspace) read(path string, line, limit *int) (string, error) {
	p, err := w.resolve(path)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("acp: read: %w", err)
	}
	text := string(b)
	if line == nil && limit == nil {
		return text, nil
	}
	lines := strings.SplitAfter(text, "\n")
	from := 0
	if line != nil && *line > 1 {
		from = min(*line-1, len(lines))
	}
	to := len(lines)
	if limit != nil && *limit >= 0 {
		to = min(from+*limit, len(lines))
	}
	return strings.Join(lines[from:to], ""), nil
}

// write replaces (or makes) a file with content.
func (w workspace) write(path, content string) error {
	p, err := w.resolve(path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("acp: write: %w", err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		return fmt.Errorf("acp: write: %w", err)
	}
	return nil
}

func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}
