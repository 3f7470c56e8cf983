package shim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/frontend/shim"
)

// With AGENT_BOOTSTRAP's artifactUploadEndpoint, each artifact is posted
// to the backend first, with the file's content, and sent with the
// backendUri it returns; when the backend fails, the artifact keeps its
// path.
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
	file, err := os.ReadFile(filepath.Join(h.dir, "mock-notes.md"))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(posted) != 1 || posted[0]["agentId"] != agentID || posted[0]["artifactId"] != a.Str("artifactId") || posted[0]["mimeType"] != "text/markdown" ||
		posted[0]["content"] == "" || !strings.HasPrefix(string(file), posted[0]["content"]) {
		t.Errorf("posted %v; the file holds %q", posted, file)
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

// A backend that refuses an artifact's content as too large (413, as
// Express's JSON limit does) gets the artifact again without it, and the
// artifact still has the backend's uri.
func TestArtifactTooLargeForTheBackend(t *testing.T) {
	var mu sync.Mutex
	var contents []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		contents = append(contents, body["content"])
		mu.Unlock()
		if body["content"] != "" {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"backendUri": "artifact://x/" + body["artifactId"]})
	}))
	defer backend.Close()
	h := start(t, newMock(), func(c *shim.Config) {
		c.Bootstrap = shim.Bootstrap{AgentID: agentID, ArtifactUploadEndpoint: backend.URL}
	})
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("note it"), nil)
	seen := events.Until("artifact", wait)
	if a := seen[len(seen)-1]; a.Str("uri") != "artifact://x/"+a.Str("artifactId") {
		t.Errorf("uri %q", a.Str("uri"))
	}
	mu.Lock()
	if len(contents) != 2 || contents[0] == "" || contents[1] != "" {
		t.Errorf("uploads' contents %q", contents)
	}
	mu.Unlock()
	events.Until("completion", wait)
}
