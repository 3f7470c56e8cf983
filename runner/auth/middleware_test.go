package auth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/runner/auth"
)

// serve runs one request through Middleware and returns the recorder and
// the token id the inner handler saw ("" when it was not reached).
func serve(t *testing.T, toks *auth.Tokens, header ...string) (*httptest.ResponseRecorder, string, bool) {
	t.Helper()
	var seen string
	reached := false
	h := auth.Middleware(toks, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = true
		seen, _ = auth.IDFromContext(r.Context())
		w.WriteHeader(http.StatusNoContent)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, request(header...))
	return rec, seen, reached
}

func TestMiddlewareRejects(t *testing.T) {
	toks := mustLoad(t, auth.LoadOptions{Getenv: env(nil), Tokens: []string{tokA, tokB}})
	cases := []struct {
		name      string
		header    []string
		challenge string
	}{
		{"missing", nil, `Bearer realm="tether"`},
		{"wrong", []string{"Bearer " + tokC}, `Bearer realm="tether", error="invalid_token"`},
		{"malformed", []string{"Token " + tokA}, `Bearer realm="tether", error="invalid_token"`},
		{"empty", []string{""}, `Bearer realm="tether", error="invalid_token"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, _, reached := serve(t, toks, c.header...)
			if reached || rec.Code != http.StatusUnauthorized {
				t.Fatalf("code %d, handler reached %v", rec.Code, reached)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != c.challenge {
				t.Fatalf("WWW-Authenticate = %q", got)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type = %q", ct)
			}
			var body map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] != "unauthorized" || body["message"] == "" {
				t.Fatalf("body %q: %v", rec.Body.String(), err)
			}
			if strings.Contains(rec.Body.String(), tokA[:8]) {
				t.Fatal("body quotes a token")
			}
		})
	}
}

func TestMiddlewareAccepts(t *testing.T) {
	toks := mustLoad(t, auth.LoadOptions{Getenv: env(nil), Tokens: []string{tokA, tokB}})
	for _, tok := range []string{tokA, tokB} {
		rec, id, reached := serve(t, toks, "Bearer "+tok)
		want, _ := toks.Check(request("Bearer " + tok))
		if !reached || rec.Code != http.StatusNoContent || id != want {
			t.Fatalf("code %d reached %v id %q want %q", rec.Code, reached, id, want)
		}
	}
}

// With no token configured nothing passes: a runner always has one (it
// generates one when none is configured).
func TestMiddlewareEmptyRefuses(t *testing.T) {
	empty := mustLoad(t, auth.LoadOptions{Getenv: env(nil)})
	for _, toks := range []*auth.Tokens{empty, nil} {
		for _, header := range [][]string{nil, {"Bearer " + tokA}} {
			rec, _, reached := serve(t, toks, header...)
			if reached || rec.Code != http.StatusUnauthorized {
				t.Fatalf("code %d reached %v", rec.Code, reached)
			}
		}
	}
}

// A refusal is logged with the remote address and the reason, never with
// what the request carried.
func TestMiddlewareLogsRefusals(t *testing.T) {
	toks := mustLoad(t, auth.LoadOptions{Getenv: env(nil), Tokens: []string{tokA}})
	var logs bytes.Buffer
	h := auth.Middleware(toks, slog.New(slog.NewTextHandler(&logs, nil)), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	for _, header := range [][]string{{"Bearer " + tokB}, nil, {"Bearer " + tokA}} {
		r := request(header...)
		r.RemoteAddr = "192.0.2.7:5555"
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 refusals logged, got:\n%s", logs.String())
	}
	for i, reason := range []string{"invalid bearer token", "missing bearer token"} {
		for _, want := range []string{"level=WARN", `msg="connection refused"`, "status=401", "remote=192.0.2.7:5555", `reason="` + reason + `"`} {
			if !strings.Contains(lines[i], want) {
				t.Errorf("line %d lacks %s: %s", i, want, lines[i])
			}
		}
	}
	for _, tok := range []string{tokA, tokB} {
		if strings.Contains(logs.String(), tok) {
			t.Fatalf("the log quotes a token:\n%s", logs.String())
		}
	}
}

func TestMiddlewareOverHTTP(t *testing.T) {
	toks := mustLoad(t, auth.LoadOptions{Getenv: env(nil), Tokens: []string{tokA}})
	srv := httptest.NewServer(auth.Middleware(toks, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})))
	defer srv.Close()
	for tok, want := range map[string]int{tokA: 200, tokB: 401, "": 401} {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("token %.4s…: status %d, want %d", tok, resp.StatusCode, want)
		}
	}
	srv.Client().CloseIdleConnections()
}

// Replace rotates tokens while the runner serves: a dropped token is
// refused from then on, a new one accepted, a kept one untouched; a stream
// open on the dropped token ends with ErrTokenRevoked as its cause, and
// one on the kept token goes on.
func TestReplaceRevokesOpenRequests(t *testing.T) {
	toks := mustLoad(t, auth.LoadOptions{Getenv: env(nil), Tokens: []string{tokA, tokB}})
	type ended struct {
		tok   string
		cause error
	}
	entered, out := make(chan string, 2), make(chan ended, 2)
	srv := httptest.NewServer(auth.Middleware(toks, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		entered <- r.Header.Get("Authorization")
		<-r.Context().Done() // a stream: until the client or the token goes
		out <- ended{r.Header.Get("Authorization"), context.Cause(r.Context())}
	})))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	open := func(tok string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		return srv.Client().Do(req)
	}
	var streams []*http.Response
	for _, tok := range []string{tokA, tokB} {
		resp, err := open(tok)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("open with %.4s…: %v %v", tok, resp, err)
		}
		streams = append(streams, resp)
		<-entered
	}

	revoked := toks.Replace(mustLoad(t, auth.LoadOptions{Getenv: env(nil), Tokens: []string{tokB, tokC}}))
	if len(revoked) != 1 || toks.Len() != 2 {
		t.Fatalf("revoked %v, %d tokens left", revoked, toks.Len())
	}
	select {
	case e := <-out:
		if e.tok != "Bearer "+tokA || !errors.Is(e.cause, auth.ErrTokenRevoked) {
			t.Fatalf("ended: %.11s… with %v", e.tok, e.cause)
		}
	case <-ctx.Done():
		t.Fatal("the revoked token's stream is still open")
	}
	if _, err := io.ReadAll(streams[0].Body); err != nil {
		t.Fatalf("the revoked stream did not end cleanly: %v", err)
	}
	for tok, want := range map[string]int{tokA: 401, tokC: 200} {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		shortCtx, stop := context.WithCancel(ctx)
		resp, err := srv.Client().Do(req.WithContext(shortCtx))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != want {
			t.Fatalf("token %.4s… after the rotation: %d, want %d", tok, resp.StatusCode, want)
		}
		if want == 200 {
			<-entered
		}
		stop() // ends the new stream
		resp.Body.Close()
		if want == 200 {
			<-out
		}
	}
	select {
	case e := <-out:
		t.Fatalf("the kept token's stream ended: %+v", e)
	default:
	}
	cancel() // the client goes: the kept stream ends too
	if e := <-out; e.tok != "Bearer "+tokB || errors.Is(e.cause, auth.ErrTokenRevoked) {
		t.Fatalf("kept stream ended with %v", e.cause)
	}
	for _, s := range streams {
		s.Body.Close()
	}
	srv.Client().CloseIdleConnections()
}

// Replacing with nothing refuses everything and reports every token.
func TestReplaceWithNothing(t *testing.T) {
	toks := mustLoad(t, auth.LoadOptions{Getenv: env(nil), Tokens: []string{tokA, tokB}})
	if revoked := toks.Replace(nil); len(revoked) != 2 || !toks.Empty() {
		t.Fatalf("revoked %v, empty %v", revoked, toks.Empty())
	}
	if rec, _, reached := serve(t, toks, "Bearer "+tokA); reached || rec.Code != http.StatusUnauthorized {
		t.Fatalf("code %d", rec.Code)
	}
}
