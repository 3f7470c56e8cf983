package auth_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/runner/auth"
)

const (
	tokA = "aaaaaaaaaaaaaaaa-token-one"
	tokB = "bbbbbbbbbbbbbbbb-token-two"
	tokC = "cccccccccccccccc-token-three"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func request(header ...string) *http.Request {
	r, _ := http.NewRequest("GET", "http://runner/v1/sessions", nil)
	for _, h := range header {
		r.Header.Add("Authorization", h)
	}
	return r
}

func mustLoad(t *testing.T, opts auth.LoadOptions) *auth.Tokens {
	t.Helper()
	toks, err := auth.Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

func TestLoadEnvRotation(t *testing.T) {
	toks := mustLoad(t, auth.LoadOptions{Getenv: env(map[string]string{
		auth.EnvToken: " " + tokA + " ,, " + tokB + ",",
	})})
	if toks.Len() != 2 || toks.Empty() {
		t.Fatalf("Len = %d", toks.Len())
	}
	idA, okA := toks.Check(request("Bearer " + tokA))
	idB, okB := toks.Check(request("Bearer " + tokB))
	if !okA || !okB || idA == idB || len(idA) != 8 {
		t.Fatalf("ids %q %v, %q %v", idA, okA, idB, okB)
	}
	if ids := toks.IDs(); len(ids) != 2 || ids[0] != idA || ids[1] != idB {
		t.Fatalf("IDs = %v", ids)
	}
	// The id is stable across loads and is not part of the token.
	again := mustLoad(t, auth.LoadOptions{Tokens: []string{tokA}})
	if id, _ := again.Check(request("Bearer " + tokA)); id != idA || strings.Contains(tokA, id) {
		t.Fatalf("id %q not stable (was %q)", id, idA)
	}
}

func TestLoadBothEnvNames(t *testing.T) {
	for _, name := range []string{auth.EnvToken, auth.EnvSidecarToken} {
		t.Run(name, func(t *testing.T) {
			toks := mustLoad(t, auth.LoadOptions{Getenv: env(map[string]string{name: tokA})})
			if _, ok := toks.Check(request("Bearer " + tokA)); !ok {
				t.Fatal("token from", name, "not accepted")
			}
		})
	}
	both := mustLoad(t, auth.LoadOptions{Getenv: env(map[string]string{auth.EnvToken: tokA, auth.EnvSidecarToken: tokB + "," + tokA})})
	if both.Len() != 2 {
		t.Fatalf("duplicates should count once: Len = %d", both.Len())
	}
}

func TestLoadRealEnvironment(t *testing.T) {
	t.Setenv(auth.EnvToken, tokC)
	t.Setenv(auth.EnvSidecarToken, "")
	toks := mustLoad(t, auth.LoadOptions{})
	if _, ok := toks.Check(request("Bearer " + tokC)); !ok || toks.Len() != 1 {
		t.Fatal("token from the process environment not loaded")
	}
}

func TestLoadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	content := "# runner tokens\n\n  " + tokB + "  \n#" + tokC + "\n" + tokA + "\r\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	toks := mustLoad(t, auth.LoadOptions{File: path, Getenv: env(nil)})
	if toks.Len() != 2 {
		t.Fatalf("Len = %d", toks.Len())
	}
	for tok, want := range map[string]bool{tokA: true, tokB: true, tokC: false} {
		if _, ok := toks.Check(request("Bearer " + tok)); ok != want {
			t.Errorf("token %.4s…: ok = %v, want %v", tok, ok, want)
		}
	}
	_, err := auth.Load(auth.LoadOptions{File: filepath.Join(t.TempDir(), "missing"), Getenv: env(nil)})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestLoadRejectsBadTokens(t *testing.T) {
	short := "short-token-15b"
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(tokA+"\n"+short+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]auth.LoadOptions{
		"short env":     {Getenv: env(map[string]string{auth.EnvToken: tokA + "," + short})},
		"short sidecar": {Getenv: env(map[string]string{auth.EnvSidecarToken: short})},
		"short file":    {Getenv: env(nil), File: path},
		"inner space":   {Getenv: env(nil), Tokens: []string{"aaaaaaaa bbbbbbbbbbbb"}},
		"control char":  {Getenv: env(nil), Tokens: []string{"aaaaaaaa\x01bbbbbbbbbbbb"}},
		"empty given":   {Getenv: env(nil), Tokens: []string{""}},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := auth.Load(opts)
			var te *auth.TokenError
			if !errors.Is(err, auth.ErrInvalidToken) || !errors.As(err, &te) {
				t.Fatalf("err = %v", err)
			}
			if strings.Contains(err.Error(), short) || strings.Contains(err.Error(), "bbbbbbbb") {
				t.Fatalf("error quotes the token: %v", err)
			}
		})
	}
	var te *auth.TokenError
	_, err := auth.Load(auth.LoadOptions{Getenv: env(nil), File: path})
	if !errors.As(err, &te) || te.Source != path+":2" {
		t.Fatalf("source = %v", err)
	}
}

func TestLoadNothingIsEmpty(t *testing.T) {
	toks := mustLoad(t, auth.LoadOptions{Getenv: env(nil)})
	if !toks.Empty() || toks.Len() != 0 {
		t.Fatal("no tokens should be Empty")
	}
	if _, ok := toks.Check(request("Bearer " + tokA)); ok {
		t.Fatal("an empty set accepted a token")
	}
	var nilTokens *auth.Tokens
	if !nilTokens.Empty() || nilTokens.IDs() != nil {
		t.Fatal("nil Tokens should be Empty")
	}
	if _, ok := nilTokens.Check(request("Bearer " + tokA)); ok {
		t.Fatal("nil Tokens accepted a token")
	}
}

func TestCheckHeaderForms(t *testing.T) {
	toks := mustLoad(t, auth.LoadOptions{Getenv: env(nil), Tokens: []string{tokA}})
	cases := []struct {
		name   string
		header []string
		ok     bool
	}{
		{"exact", []string{"Bearer " + tokA}, true},
		{"scheme case", []string{"bearer " + tokA}, true},
		{"extra spaces", []string{"  Bearer   " + tokA + " "}, true},
		{"missing", nil, false},
		{"wrong", []string{"Bearer " + tokB}, false},
		{"prefix of token", []string{"Bearer " + tokA[:len(tokA)-1]}, false},
		{"token plus suffix", []string{"Bearer " + tokA + "x"}, false},
		{"basic scheme", []string{"Basic " + tokA}, false},
		{"no scheme", []string{tokA}, false},
		{"scheme only", []string{"Bearer"}, false},
		{"scheme and space", []string{"Bearer "}, false},
		{"two tokens", []string{"Bearer " + tokA + " " + tokA}, false},
		{"two headers", []string{"Bearer " + tokA, "Bearer " + tokA}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := toks.Check(request(c.header...)); ok != c.ok {
				t.Fatalf("ok = %v, want %v", ok, c.ok)
			}
		})
	}
}
