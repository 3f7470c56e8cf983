package auth_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tetherhq/tether/runner/auth"
)

func TestLoopbackHosts(t *testing.T) {
	var logs bytes.Buffer
	h := auth.LoopbackHosts(slog.New(slog.NewTextHandler(&logs, nil)), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	cases := map[string]bool{
		"127.0.0.1:7420": true, "127.0.0.1": true, "127.9.8.7:1": true, "localhost:7420": true, "LOCALHOST": true,
		"[::1]:7420": true, "[::1]": true, "[::ffff:127.0.0.1]:7420": true,
		"evil.example:7420": false, "evil.example": false, "localhost.evil.example:7420": false,
		"0.0.0.0:7420": false, "192.168.1.2:7420": false, "[::]:7420": false, "": false, "localhost.:7420": false,
	}
	for host, ok := range cases {
		r := httptest.NewRequest("GET", "/sessions", nil)
		r.Host = host
		r.RemoteAddr = "127.0.0.1:5555"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if ok != (rec.Code == http.StatusNoContent) {
			t.Errorf("Host %q: status %d", host, rec.Code)
			continue
		}
		if ok {
			continue
		}
		var body map[string]string
		if rec.Code != http.StatusForbidden || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body["error"] != "forbidden_host" || body["message"] == "" {
			t.Errorf("Host %q: %d %s", host, rec.Code, rec.Body.String())
		}
	}
	if !strings.Contains(logs.String(), `host=evil.example:7420 remote=127.0.0.1:5555`) || !strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("refusal not logged:\n%s", logs.String())
	}
}
