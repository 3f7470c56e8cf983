package keyproxy_test

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/runner/keyproxy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestProxySwapsTheKeyAndStreams(t *testing.T) {
	var gotKey, gotPath string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey, gotPath = r.Header.Get("x-api-key"), r.URL.RequestURI()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{"event: a\ndata: 1\n\n", "event: b\ndata: 2\n\n"} {
			_, _ = io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	}))
	defer up.Close()
	p, err := keyproxy.Start(keyproxy.Config{Upstream: up.URL, Credentials: map[string]string{"x-api-key": "sk-real"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	req, _ := http.NewRequest("POST", p.URL()+"/v1/messages?beta=true", strings.NewReader(`{}`))
	req.Header.Set("x-api-key", p.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events int
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event:") {
			events++
		}
	}
	if gotKey != "sk-real" || gotPath != "/v1/messages?beta=true" || events != 2 || resp.StatusCode != 200 {
		t.Fatalf("upstream saw key %q path %q; client got %d events, status %d", gotKey, gotPath, events, resp.StatusCode)
	}
	if strings.Contains(p.Token(), "sk-real") {
		t.Fatal("stand-in token contains the real key")
	}
}

func TestProxyRefusesOtherKeys(t *testing.T) {
	called := false
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	defer up.Close()
	p, err := keyproxy.Start(keyproxy.Config{Upstream: up.URL, Credentials: map[string]string{"x-api-key": "sk-real", "Authorization": "oauth-real"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, key := range []string{"", "sk-real", "wrong"} {
		req, _ := http.NewRequest("GET", p.URL()+"/v1/models", nil)
		if key != "" {
			req.Header.Set("x-api-key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("key %q: status %d", key, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", p.URL()+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+p.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !called {
		t.Fatalf("bearer stand-in: status %d, upstream called %v", resp.StatusCode, called)
	}
	if _, err := keyproxy.Start(keyproxy.Config{Upstream: "ftp://x"}); err == nil {
		t.Fatal("bad upstream accepted")
	}
}
