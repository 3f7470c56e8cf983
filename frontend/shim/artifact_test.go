package shim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/tetherhq/tether/frontend/shim"
)

// With AGENT_BOOTSTRAP's artifactUploadEndpoint, each artifact is posted
// to the backend first and sent with the backendUri it returns; when the
// backend fails, the artifact keeps its path.
func TestArtifactUpload(t *testing.T) {
	var mu sync.Mutex
	var posted []map[string]string
	fail := false
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		defer mu.Unlock()
		posted = append(posted, body)
		if fail || r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"backendUri": "artifact://" + body["agentId"] + "/" + body["artifactId"],
			"artifactId": body["artifactId"], "stored": true})
	}))
	defer backend.Close()
	h := start(t, newMock(), func(c *shim.Config) {
		c.Bootstrap = shim.Bootstrap{BackendURL: backend.URL, BackendToken: "tok", AgentID: agentID,
			ArtifactUploadEndpoint: backend.URL + "/api/artifacts"}
	})
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("note it"), nil)
	seen := events.Until("artifact", wait)
	a := seen[len(seen)-1]
	if want := "artifact://" + agentID + "/" + a.Str("artifactId"); a.Str("uri") != want {
		t.Errorf("uri %q, want %q", a.Str("uri"), want)
	}
	mu.Lock()
	if len(posted) != 1 || posted[0]["agentId"] != agentID || posted[0]["artifactId"] != a.Str("artifactId") || posted[0]["mimeType"] != "text/markdown" {
		t.Errorf("posted %v", posted)
	}
	fail = true
	mu.Unlock()
	events.Until("completion", wait)
	h.Must(200, "POST", "/spawn", brief("note again"), nil)
	seen = events.Until("artifact", wait)
	if uri := seen[len(seen)-1].Str("uri"); uri != "mock-notes.md" {
		t.Errorf("after a failed upload the uri is %q", uri)
	}
	events.Until("completion", wait)
}
