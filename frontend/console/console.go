package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
)

//go:embed static
var files embed.FS

// contentSecurityPolicy lets the page load only its own files and talk
// only to its own origin. Agent text is never parsed as HTML (the script
// sets textContent), and the policy is the second line of defence: no
// inline script, no script of another origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console; mount it at "/" (the most general pattern,
// so /v1/ and the runner's other routes keep theirs). GET and HEAD of "/"
// and of the console's own files are answered; anything else is 404 or 405.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := path.Clean(r.URL.Path)
		if name == "/" {
			name = "/index.html"
		}
		name = "static" + name
		if st, err := fs.Stat(files, name); err != nil || st.IsDir() || r.URL.Path == "/index.html" {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		// The console is small; always revalidating keeps a browser from
		// running an old script against a newer runner after an upgrade.
		h.Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, files, name)
	})
}
