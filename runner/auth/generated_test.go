package auth_test

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/runner/auth"
)

func readToken(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(data), "\n")
}

func TestLoadOrGenerateCreates(t *testing.T) {
	dir := t.TempDir()
	g, err := auth.LoadOrGenerate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Created || g.File != filepath.Join(dir, auth.GeneratedTokenFile) || g.Tokens.Len() != 1 {
		t.Fatalf("got %+v", g)
	}
	info, err := os.Stat(g.File)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v: %v", info.Mode(), err)
	}
	tok := readToken(t, g.File)
	if b, err := hex.DecodeString(tok); err != nil || len(b) != 32 {
		t.Fatalf("token %d chars, not 32 bytes of hex: %v", len(tok), err)
	}
	if _, ok := g.Tokens.Check(request("Bearer " + tok)); !ok {
		t.Fatal("the generated token is not accepted")
	}
	// Nothing else is left in the directory (no temporary files).
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("directory holds %d entries", len(entries))
	}
}

// A second start reuses the token, so hosts that read it keep working.
func TestLoadOrGenerateReuses(t *testing.T) {
	dir := t.TempDir()
	first, err := auth.LoadOrGenerate(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := auth.LoadOrGenerate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || again.Tokens.IDs()[0] != first.Tokens.IDs()[0] {
		t.Fatalf("second start: created %v, id %v vs %v", again.Created, again.Tokens.IDs(), first.Tokens.IDs())
	}
	// A relative directory gives an absolute file.
	t.Chdir(dir)
	rel, err := auth.LoadOrGenerate(".")
	if err != nil || rel.File != first.File {
		t.Fatalf("relative: %+v, %v", rel, err)
	}
}

// Runners starting at once in one directory end up with one token.
func TestLoadOrGenerateConcurrent(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	ids := make([]string, 8)
	errs := make([]error, 8)
	for i := range ids {
		wg.Go(func() {
			g, err := auth.LoadOrGenerate(dir)
			errs[i] = err
			if err == nil {
				ids[i] = g.Tokens.IDs()[0]
			}
		})
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("start %d: id %q (first %q), %v", i, ids[i], ids[0], errs[i])
		}
	}
	if _, ok := mustGenerated(t, dir).Tokens.Check(request("Bearer " + readToken(t, filepath.Join(dir, auth.GeneratedTokenFile)))); !ok {
		t.Fatal("file and token disagree")
	}
}

func mustGenerated(t *testing.T, dir string) *auth.Generated {
	t.Helper()
	g, err := auth.LoadOrGenerate(dir)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A token file someone changed is refused, not replaced, and the error
// never quotes its content.
func TestLoadOrGenerateRefusesChangedFile(t *testing.T) {
	good := strings.Repeat("ab", 32)
	cases := map[string]struct {
		content string
		mode    os.FileMode
		reason  string
	}{
		"readable by others": {good + "\n", 0o644, "may be read by others"},
		"group readable":     {good + "\n", 0o640, "may be read by others"},
		"short":              {"abcdef0123456789abcdef\n", 0o600, "hex digits"},
		"not hex":            {strings.Repeat("zz", 32) + "\n", 0o600, "hex digits"},
		"two lines":          {good + "\n" + good + "\n", 0o600, "hex digits"},
		"upper case":         {strings.ToUpper(good) + "\n", 0o600, "hex digits"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, auth.GeneratedTokenFile)
			if err := os.WriteFile(path, []byte(c.content), c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil { // past the umask
				t.Fatal(err)
			}
			_, err := auth.LoadOrGenerate(dir)
			var fe *auth.TokenFileError
			if !errors.Is(err, auth.ErrTokenFile) || !errors.As(err, &fe) || fe.Path != path || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("err = %v", err)
			}
			if strings.Contains(err.Error(), "abab") || strings.Contains(err.Error(), "zzzz") {
				t.Fatalf("error quotes the file: %v", err)
			}
			if got, _ := os.ReadFile(path); string(got) != c.content {
				t.Fatal("the file was changed")
			}
		})
	}
	t.Run("symlink", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(t.TempDir(), "elsewhere")
		if err := os.WriteFile(target, []byte(good+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, auth.GeneratedTokenFile)); err != nil {
			t.Fatal(err)
		}
		if _, err := auth.LoadOrGenerate(dir); !errors.Is(err, auth.ErrTokenFile) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestLoadOrGenerateUnwritableDir(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root writes anywhere")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	if _, err := auth.LoadOrGenerate(dir); err == nil {
		t.Fatal("no error")
	}
}
