package mock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tetherhq/tether/agent"
)

// notesName is the one file the mock writes, in its workspace.
const notesName = "mock-notes.md"

// notesFile is what a conversation wrote to mock-notes.md: the file as it
// was before the first change, and the lines appended since.
type notesFile struct {
	existed  bool
	original string
	added    []string
}

// appendNote appends line to mock-notes.md in workspace (through an
// os.Root, so a link cannot lead the write out of it) and returns this
// change with its diff.
func (c *conversation) appendNote(workspace, line string) (agent.FileChange, error) {
	if workspace == "" {
		return agent.FileChange{}, errors.New("the session has no workspace")
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return agent.FileChange{}, err
	}
	defer root.Close()
	old, err := root.ReadFile(notesName)
	existed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return agent.FileChange{}, err
	}
	text := line + "\n"
	if len(old) > 0 && !strings.HasSuffix(string(old), "\n") {
		text = "\n" + text
	}
	f, err := root.OpenFile(notesName, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return agent.FileChange{}, err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return agent.FileChange{}, err
	}
	if c.notes == nil {
		c.notes = &notesFile{existed: existed, original: string(old)}
	}
	c.notes.added = append(c.notes.added, line)
	return agent.FileChange{Path: notesName, Kind: kind(existed), Diff: appendDiff(notesName, existed, string(old), []string{line})}, nil
}

// noteKind is what the next note will do to the file: add it, or update
// it.
func (s *session) noteKind() agent.ChangeKind {
	_, err := os.Lstat(filepath.Join(s.workspace, notesName))
	return kind(err == nil)
}

// change is the conversation's whole change of the file.
func (n *notesFile) change() agent.FileChange {
	return agent.FileChange{Path: notesName, Kind: kind(n.existed), Diff: appendDiff(notesName, n.existed, n.original, n.added)}
}

func kind(existed bool) agent.ChangeKind {
	if existed {
		return agent.ChangeUpdate
	}
	return agent.ChangeAdd
}

// appendDiff is the unified diff of appending lines to a file whose
// content was old (none, if it did not exist).
func appendDiff(path string, existed bool, old string, lines []string) string {
	var b strings.Builder
	if existed {
		fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", path, path)
	} else {
		fmt.Fprintf(&b, "--- /dev/null\n+++ b/%s\n", path)
	}
	oldLines := strings.SplitAfter(old, "\n")
	if oldLines[len(oldLines)-1] == "" {
		oldLines = oldLines[:len(oldLines)-1]
	}
	n := len(oldLines)
	if n > 0 && !strings.HasSuffix(old, "\n") {
		// The last line gains its newline: it is replaced.
		last := oldLines[n-1]
		fmt.Fprintf(&b, "@@ -%d,1 +%d,%d @@\n-%s\n\\ No newline at end of file\n+%s\n", n, n, len(lines)+1, last, last)
	} else {
		fmt.Fprintf(&b, "@@ -%d,0 +%d,%d @@\n", n, n+1, len(lines))
	}
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}
