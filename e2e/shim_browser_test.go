package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/testing/shimclient"
)

// attackPage is a page of another origin: what its script can send the
// shim without the shim's say (a no-cors text/plain POST needs no
// preflight, and a WebSocket none at all). Its hash names the shim's
// port, and what to try: spawn (a run with the page's own brief), a
// decision to approve. window.result says how each went.
const attackPage = `<!doctype html><title>another site</title><script>
const p = Object.fromEntries(new URLSearchParams(location.hash.slice(1)));
const shim = "http://127.0.0.1:" + p.port;
async function post(path, body) {
  try {
    await fetch(shim + path, {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: JSON.stringify(body)});
    return "sent";
  } catch (e) { return "failed: " + e; }
}
function subscribe(url) {
  return new Promise(resolve => {
    let opened = false, frames = 0;
    const ws = new WebSocket(url);
    ws.onopen = () => { opened = true; setTimeout(() => ws.close(), 2000); };
    ws.onmessage = () => { frames++; };
    ws.onclose = (e) => resolve({opened, frames, code: e.code});
  });
}
(async () => {
  const out = {};
  if (p.spawn) out.spawn = await post("/spawn", {agentId: p.agent, role: "intruder", description: "REQUEST_APPROVAL the page's own brief",
    workstream: "w", projectBrief: {title: "t", description: "d"}});
  if (p.decision) out.resolve = await post("/resolve", {decisionId: p.decision, resolution: {type: "tool_approval", action: "approve"}});
  out.ws = await subscribe("ws://127.0.0.1:" + p.port + "/events");
  window.result = out;
})();
</script>`

// reboundScript runs in a page the browser loaded from the shim's own
// port under a name pointed at 127.0.0.1 (DNS rebinding): to it the shim
// is same-origin, so it may send JSON and read the replies.
const reboundScript = `(async () => {
  const r = await fetch("/spawn", {method: "POST", headers: {"Content-Type": "application/json"},
    body: JSON.stringify({agentId: "` + shimAgentID + `", role: "intruder", description: "REQUEST_APPROVAL rebound", workstream: "w",
      projectBrief: {title: "t", description: "d"}})});
  const ws = await new Promise(resolve => {
    let opened = false;
    const s = new WebSocket("ws://" + location.host + "/events");
    s.onopen = () => { opened = true; setTimeout(() => s.close(), 2000); };
    s.onclose = (e) => resolve({opened, code: e.code});
  });
  window.result = {spawn: r.status, body: await r.text(), ws};
})(); true`

// The real `tether shim` in headless Chromium, as a web page the user has
// open would try it: a page of another loopback origin cannot start a run
// (a no-cors text/plain POST), approve the run's decision, or open WS
// /events; a page reaching the shim under a rebound name (evil.example
// mapped to 127.0.0.1 inside Chromium, so no DNS is used) is refused, its
// same-origin JSON and WebSocket too. The backend's own calls, made
// alongside, go through: its run waits on the decision until the backend
// approves it.
func TestShimRefusesWebPages(t *testing.T) {
	timed(t)
	chromium := requireChromium(t)
	child := shimclient.Launch(t, nil, `{"backendUrl":"http://127.0.0.1:9","agentId":"`+shimAgentID+`"}`, buildTether(t),
		"shim", "--mock", "--workspace", filepath.Join(t.TempDir(), "ws"))
	backend := child.Client(t, shimAgentID)
	port := strconv.Itoa(child.Port)
	events := backend.Events("")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(attackPage))
	}))
	t.Cleanup(site.Close)
	b := openShimBrowser(t, chromium, "MAP evil.example 127.0.0.1")
	health := func() shim.Health {
		var h shim.Health
		backend.Must(200, "GET", "/health", nil, &h)
		return h
	}

	// A rebound name: the shim's own port, under the attacker's name.
	b.run(chromedp.Navigate("http://evil.example:" + port + "/health"))
	if text := b.string(`document.body.innerText`); !strings.Contains(text, "is not this shim's") || strings.Contains(text, "healthy") {
		t.Fatalf("GET /health under a rebound name showed: %s", text)
	}
	b.run(chromedp.Evaluate[chromedp.Void](reboundScript))
	b.until(`window.result !== undefined`, "the rebound page's tries")
	if got := b.string(`JSON.stringify(window.result)`); !strings.Contains(got, `"spawn":403`) || !strings.Contains(got, `"opened":false`) {
		t.Fatalf("the rebound page: %s", got)
	}

	// Another origin: a run with its brief, and the event stream.
	b.run(chromedp.Navigate(site.URL + "/#spawn=1&agent=" + shimAgentID + "&port=" + port))
	b.until(`window.result !== undefined`, "the page's tries")
	if got := b.string(`JSON.stringify(window.result)`); !strings.Contains(got, `"opened":false`) || !strings.Contains(got, `"frames":0`) {
		t.Fatalf("the page's WebSocket: %s", got)
	}
	if h := health(); h.AgentStatus != shim.StatusDone {
		t.Fatalf("a page started a run: %s", h.AgentStatus)
	}

	// The backend's run waits on a decision; the page tries to approve it.
	backend.Must(200, "POST", "/spawn", shimBrief("REQUEST_APPROVAL then report"), nil)
	seen := events.Until("decision/tool_approval", time.Minute)
	if slices.ContainsFunc(seen, func(e shimclient.Envelope) bool { return strings.Contains(e.Str("message"), "the page's own brief") }) {
		t.Fatalf("the page's brief reached the agent")
	}
	decision := seen[len(seen)-1].Str("decisionId")
	b.run(chromedp.Navigate(site.URL + "/?again=1#port=" + port + "&decision=" + decision)) // a new document, not a new hash
	b.until(`window.result !== undefined && window.result.resolve !== undefined`, "the page's approval")
	if h := health(); h.AgentStatus != shim.StatusWaiting {
		t.Fatalf("after the page's approval the agent is %s", h.AgentStatus)
	}
	var resolved map[string]string
	backend.Must(200, "POST", "/resolve", map[string]any{"decisionId": decision,
		"resolution": map[string]any{"type": "tool_approval", "action": "approve"}}, &resolved)
	if resolved["status"] != "resolved" {
		t.Fatalf("the decision the page tried was answered already: %v", resolved)
	}
	if done := events.Until("completion", time.Minute); done[len(done)-1].Str("outcome") != "success" {
		t.Fatalf("completion %+v", done[len(done)-1].Event)
	}
	if log := child.Stderr(); strings.Count(log, "request refused") < 4 {
		t.Errorf("the refusals are not logged:\n%s", log)
	}
	child.Stop(t)
	events.Close()
}

// openShimBrowser is a headless Chromium tab launched as the console's
// tests launch it, resolving names by rules (Chromium's
// --host-resolver-rules) instead of DNS.
func openShimBrowser(t *testing.T, execPath, resolverRules string) *browser {
	t.Helper()
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(execPath), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("host-resolver-rules", resolverRules))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses its own sandbox as root
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		_ = chromedp.Cancel(ctx)
		cancel()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx}
	b.first(chromedp.Func(func(context.Context, *chromedp.Target) error { return nil })) // starts the browser
	return b
}
