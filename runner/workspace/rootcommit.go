package workspace

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/adler32"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A new workspace's first snapshot commits an empty work tree to a branch
// with no commit yet. That commit is written here, as loose objects in
// git's own format, instead of by a git process: a new session then
// starts no process besides its agent.

// emptyTree is git's id of the tree with no entries.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// rootCommitRef is the branch a root commit of the empty tree can be
// written to: HEAD's branch when it has no commit yet. ok is false when a
// git process must do the snapshot.
func (w *Workspace) rootCommitRef(message string) (ref string, ok bool) {
	if message == "" || message != strings.TrimSpace(message) || strings.ContainsAny(message, "\n\r") {
		return "", false // git would clean such a message up
	}
	if !validIdent(w.m.opts.GitName) || !validIdent(w.m.opts.GitEmail) || !w.nothingToAdd() {
		return "", false
	}
	ref, ok = w.headBranch()
	if !ok {
		return "", false
	}
	for _, p := range []string{filepath.FromSlash(ref), "packed-refs"} {
		if _, err := os.Lstat(filepath.Join(w.gitDir, p)); !errors.Is(err, fs.ErrNotExist) {
			return "", false // the branch has a commit, or may have one
		}
	}
	return ref, true
}

// validIdent reports whether s can stand in a commit's author line as is.
func validIdent(s string) bool {
	return s != "" && s == strings.TrimSpace(s) && !strings.ContainsAny(s, "<>\n\r\x00")
}

// writeRootCommit commits the empty tree to ref and returns the commit.
func (w *Workspace) writeRootCommit(ref, message string, now time.Time) (string, error) {
	if _, err := w.writeObject("tree", nil); err != nil {
		return "", err
	}
	who := fmt.Sprintf("%s <%s> %d +0000", w.m.opts.GitName, w.m.opts.GitEmail, now.Unix())
	body := "tree " + emptyTree + "\nauthor " + who + "\ncommitter " + who + "\n\n" + message + "\n"
	id, err := w.writeObject("commit", []byte(body))
	if err != nil {
		return "", err
	}
	if err := writeFileAtomic(filepath.Join(w.gitDir, filepath.FromSlash(ref)), []byte(id+"\n")); err != nil {
		return "", err
	}
	return id, nil
}

// writeObject stores a loose object and returns its id.
func (w *Workspace) writeObject(kind string, content []byte) (string, error) {
	raw := append([]byte(kind+" "+strconv.Itoa(len(content))+"\x00"), content...)
	sum := sha1.Sum(raw)
	id := hex.EncodeToString(sum[:])
	dir := filepath.Join(w.gitDir, "objects", id[:2])
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, id[2:]), zlibStored(raw)); err != nil {
		return "", err
	}
	return id, nil
}

// zlibStored wraps data in a zlib stream of stored (uncompressed) blocks,
// which git reads like any other: these objects are a few hundred bytes,
// and a compressor's state is hundreds of kilobytes.
func zlibStored(data []byte) []byte {
	out := make([]byte, 0, len(data)+len(data)/0xffff*5+11)
	out = append(out, 0x78, 0x01) // deflate, 32 KiB window, no dictionary
	rest := data
	for {
		n := min(len(rest), 0xffff)
		last := n == len(rest)
		out = append(out, boolByte(last), byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		out = append(out, rest[:n]...)
		rest = rest[n:]
		if last {
			break
		}
	}
	return binary.BigEndian.AppendUint32(out, adler32.Checksum(data))
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// writeFileAtomic writes data to path through a temporary file and a
// rename, so a reader never sees a partial file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".lock"
	if err := os.WriteFile(tmp, data, 0o400); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}
