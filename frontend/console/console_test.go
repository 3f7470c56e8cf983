package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/tetherhq/tether/frontend/console"
)

func get(t *testing.T, h http.Handler, method, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	resp := rec.Result()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// The page and its two files are served with a policy that runs only the
// console's own script; nothing else is.
func TestServesTheConsole(t *testing.T) {
	h := console.Handler()
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/", "text/html", `<script src="console.js" defer>`},
		{"/console.js", "javascript", `sessionStorage`},
		{"/console.css", "text/css", `@media`},
	} {
		resp, body := get(t, h, "GET", tc.path)
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(body, tc.contains) {
			t.Errorf("%s: %d %q, body has %q: %v", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.contains, strings.Contains(body, tc.contains))
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "form-action 'none'") {
			t.Errorf("%s: CSP %q", tc.path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", tc.path, resp.Header)
		}
	}
	if resp, _ := get(t, h, "HEAD", "/"); resp.StatusCode != 200 {
		t.Errorf("HEAD /: %d", resp.StatusCode)
	}
}

func TestRefusesWhatIsNotTheConsole(t *testing.T) {
	h := console.Handler()
	for _, path := range []string{"/nope", "/index.html", "/static/console.js", "/../console.go", "/console.go", "/v2/x"} {
		if resp, _ := get(t, h, "GET", path); resp.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		if resp, _ := get(t, h, m, "/"); resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /: %d %q", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
}

// The script never hands a string to an HTML parser: agent text reaches
// the page only as text nodes. (The browser test proves it with markup in
// a reply and a tool's output; this keeps anyone from adding a sink.)
func TestScriptHasNoHTMLSinks(t *testing.T) {
	_, js := get(t, console.Handler(), "GET", "/console.js")
	sinks := regexp.MustCompile(`\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval|Function\(|createContextualFragment|setAttribute\(\s*["']on)`)
	if m := sinks.FindAllString(js, -1); len(m) > 0 {
		t.Fatalf("console.js uses HTML or code sinks: %v", m)
	}
}

// Every control the console promises carries its accessible name: a
// <label for> naming an element with that id, or a button's own text.
func TestControlsHaveTheirNames(t *testing.T) {
	_, page := get(t, console.Handler(), "GET", "/")
	labelled := map[string]string{"Token": "token", "Agent": "create-agent", "Workspace": "create-workspace", "Prompt": "prompt"}
	for name, id := range labelled {
		if !strings.Contains(page, `<label for="`+id+`"`) || !regexp.MustCompile(`<label for="`+id+`"[^>]*>`+name+`</label>`).MatchString(page) ||
			!strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("no control labelled %q (id %s)", name, id)
		}
	}
	for _, name := range []string{"New session", "Send", "Interrupt"} {
		if !regexp.MustCompile(`<button[^>]*>` + name + `</button>`).MatchString(page) {
			t.Errorf("no button %q", name)
		}
	}
	_, js := get(t, console.Handler(), "GET", "/console.js")
	for _, name := range []string{`"Approve")`, `"Deny")`} {
		if !strings.Contains(js, name) {
			t.Errorf("console.js makes no %s button", name)
		}
	}
}
