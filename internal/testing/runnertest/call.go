package runnertest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Call calls a runner's sessions API at base (http://host:port) with the
// bearer token, a JSON body when one is given, and decodes the answer
// into out unless out is nil; it returns the status.
func Call(t testing.TB, base, token, method, path, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return resp.StatusCode
}
