package auth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// GeneratedTokenFile is the name, in the runner's data directory, of the
// token a runner generates when none is configured.
const GeneratedTokenFile = "auth-token"

// generatedTokenBytes is the entropy of a generated token; it is written as
// twice as many hex digits.
const generatedTokenBytes = 32

// Generated is the token a runner without a configured one uses.
type Generated struct {
	Tokens *Tokens // the generated token alone
	File   string  // where it is kept (mode 0600)
	// Created is false when File was there already, from an earlier start.
	Created bool
}

// LoadOrGenerate returns the token kept in dir/GeneratedTokenFile, making
// one first if the file does not exist: 32 random bytes as 64 hex digits,
// in a file of mode 0600. A file that is there is reused, so hosts that
// read it keep working across restarts (and resume their sessions); one
// that is not a regular file of this form, or that others may read, is a
// *TokenFileError, never replaced: someone changed it, and they should
// decide (remove it for a new token).
func LoadOrGenerate(dir string) (*Generated, error) {
	path, err := filepath.Abs(filepath.Join(dir, GeneratedTokenFile))
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	created := false
	tok, err := readGenerated(path)
	if errors.Is(err, fs.ErrNotExist) {
		if tok, created, err = create(path); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	set := &tokenSet{}
	if err := set.add(tok, path); err != nil {
		return nil, err
	}
	return &Generated{Tokens: newTokens(set), File: path, Created: created}, nil
}

// readGenerated reads a generated token file, refusing one that is not
// a regular file private to its owner, or not a generated token.
func readGenerated(path string) (string, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", &TokenFileError{Path: path, Reason: "is not a regular file"}
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return "", &TokenFileError{Path: path, Reason: fmt.Sprintf("may be read by others (mode %04o, want 0600)", perm)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("auth: generated token: %w", err)
	}
	tok := strings.TrimSuffix(string(data), "\n")
	if !isGeneratedForm(tok) {
		return "", &TokenFileError{Path: path, Reason: fmt.Sprintf("does not hold one token of %d hex digits", 2*generatedTokenBytes)}
	}
	return tok, nil
}

// isGeneratedForm reports whether tok looks like a generated token. Readers
// check it so that a record pointing elsewhere cannot make a host send the
// first line of some other file.
func isGeneratedForm(tok string) bool {
	if len(tok) != 2*generatedTokenBytes {
		return false
	}
	_, err := hex.DecodeString(tok)
	return err == nil && strings.ToLower(tok) == tok
}

// create writes a new token to path, unless another process got there
// first (then its token is the one): the file appears whole or not at all.
func create(path string) (tok string, created bool, err error) {
	b := make([]byte, generatedTokenBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	tok = hex.EncodeToString(b)
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+GeneratedTokenFile+"-*") // mode 0600
	if err != nil {
		return "", false, fmt.Errorf("auth: generated token: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(tok + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", false, fmt.Errorf("auth: generated token: %w", err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		tok, err := readGenerated(path)
		return tok, false, err
	} else if err != nil {
		return "", false, fmt.Errorf("auth: generated token: %w", err)
	}
	return tok, true, nil
}
