package shim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
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

// MaxArtifactContent is the largest file an artifact is uploaded with:
// a larger one, one that is not text (UTF-8), or one outside the
// workspace is uploaded without its content, as the reference uploads
// every artifact.
const MaxArtifactContent = 4 << 20

// artifactContent is the content of the artifact at path p (absolute, or
// relative to the workspace) as text; ok is false when it is not to be
// sent (see MaxArtifactContent) and why says so. It is read through the
// workspace's root, so neither ".." nor a symbolic link leads out of it.
func artifactContent(workspace, p string) (content string, ok bool, why string) {
	if workspace == "" {
		return "", false, "the shim has no workspace to read it from"
	}
	rel := filepath.Clean(p)
	if filepath.IsAbs(rel) {
		var err error
		if rel, err = filepath.Rel(workspace, rel); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", false, "it is outside the workspace"
		}
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return "", false, err.Error()
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return "", false, err.Error()
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", false, "it is not a regular file"
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxArtifactContent+1))
	switch {
	case err != nil:
		return "", false, err.Error()
	case len(data) > MaxArtifactContent:
		return "", false, fmt.Sprintf("it is larger than %d bytes", MaxArtifactContent)
	case !utf8.Valid(data):
		return "", false, "it is not text (UTF-8)"
	}
	return string(data), true, ""
}

// artifactUpload is one artifact to post to the backend.
type artifactUpload struct {
	agentID, artifactID, mimeType string
	content                       string
}

// upload posts an artifact to the bootstrap's endpoint and returns the
// backend's uri for it. Only a 201 with a backendUri counts. A backend
// that finds the body too large (413: Express's JSON limit is 100 kB by
// default) gets the artifact again without its content, as the reference
// sends every artifact, so it is still registered.
func upload(ctx context.Context, client *http.Client, b Bootstrap, a artifactUpload) (uri string, withContent bool, err error) {
	uri, status, err := post(ctx, client, b, a)
	if status == http.StatusRequestEntityTooLarge && a.content != "" {
		a.content = ""
		uri, _, err = post(ctx, client, b, a)
		return uri, false, err
	}
	return uri, a.content != "", err
}

// post is one upload; status is the backend's (0 when none came).
func post(ctx context.Context, client *http.Client, b Bootstrap, a artifactUpload) (string, int, error) {
	body, _ := json.Marshal(map[string]string{"agentId": a.agentID, "artifactId": a.artifactID, "content": a.content, "mimeType": a.mimeType})
	ctx, cancel := context.WithTimeout(ctx, uploadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.ArtifactUploadEndpoint, bytes.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if b.BackendToken != "" {
		req.Header.Set("Authorization", "Bearer "+b.BackendToken)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return "", resp.StatusCode, fmt.Errorf("shim: artifact upload: status %d", resp.StatusCode)
	}
	var out struct {
		BackendURI string `json:"backendUri"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&out); err != nil || out.BackendURI == "" {
		return "", resp.StatusCode, fmt.Errorf("shim: artifact upload: no backendUri in the reply (%v)", err)
	}
	return out.BackendURI, resp.StatusCode, nil
}
