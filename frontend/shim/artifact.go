package shim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"
)

// ArtifactKind infers an artifact's kind from its path, as the reference
// shims do: tests first (foo.test.ts is a test), then code, document and
// config extensions, else other.
func ArtifactKind(p string) string {
	name := strings.ToLower(path.Base(strings.ReplaceAll(p, "\\", "/")))
	if strings.Contains(name, ".test.") || strings.Contains(name, ".spec.") || strings.HasPrefix(name, "test_") {
		return "test"
	}
	switch path.Ext(name) {
	case ".ts", ".js", ".py", ".rs", ".go", ".java", ".tsx", ".jsx":
		return "code"
	case ".md", ".txt", ".rst":
		return "document"
	case ".json", ".yaml", ".yml", ".toml", ".ini", ".cfg":
		return "config"
	}
	return "other"
}

// mimeTypes are the types artifacts of common extensions are sent with.
var mimeTypes = map[string]string{
	".ts": "text/typescript", ".tsx": "text/typescript", ".js": "text/javascript", ".jsx": "text/javascript",
	".py": "text/x-python", ".go": "text/x-go", ".rs": "text/x-rust", ".java": "text/x-java",
	".md": "text/markdown", ".txt": "text/plain", ".rst": "text/x-rst", ".json": "application/json",
	".yaml": "application/yaml", ".yml": "application/yaml", ".toml": "application/toml",
}

// uploadTimeout bounds one artifact upload, as the reference's.
const uploadTimeout = 10 * time.Second

// upload posts an artifact to the bootstrap's endpoint and returns the
// backend's uri for it. Only a 201 with a backendUri counts.
func upload(ctx context.Context, client *http.Client, b Bootstrap, agentID, artifactID, mimeType string) (string, error) {
	body, _ := json.Marshal(map[string]string{"agentId": agentID, "artifactId": artifactID, "content": "", "mimeType": mimeType})
	ctx, cancel := context.WithTimeout(ctx, uploadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.ArtifactUploadEndpoint, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if b.BackendToken != "" {
		req.Header.Set("Authorization", "Bearer "+b.BackendToken)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("shim: artifact upload: status %d", resp.StatusCode)
	}
	var out struct {
		BackendURI string `json:"backendUri"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&out); err != nil || out.BackendURI == "" {
		return "", fmt.Errorf("shim: artifact upload: no backendUri in the reply (%v)", err)
	}
	return out.BackendURI, nil
}
