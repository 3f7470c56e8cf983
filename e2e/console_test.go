package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
)

// The web console in headless Chromium against a real runner with the
// real Claude Code CLI: a wrong token shows only a message; sign in,
// start a session and see the reply stream in; the connection dropped
// and the page reloaded mid-turn still show the whole turn, once; approve
// a command and see it run, deny one and see it refused; markup and
// script in a reply and in a command's output show as text; interrupt; a
// session ended from elsewhere says why. At phone width the approval is
// answered too. Set TETHER_CONSOLE_SCREENSHOTS to a directory to save a
// screenshot of each step (docs/console has them).
func TestRealCLIConsole(t *testing.T) {
	timed(t)
	chromium := requireChromium(t)
	tr := startRunner(t, false)
	proxy := startCutProxy(t, runnerAddr(tr))
	b := openBrowser(t, chromium)
	base := "http://" + proxy.Addr()
	api := apiClient{t: t, base: "http://" + runnerAddr(tr), token: tr.Token}

	// A wrong token: a clear message, nothing of the runner.
	b.run(chromedp.Navigate(base + "/"))
	b.hasNames("Token")
	b.signIn("wrong-token-wrong-token-wrong")
	b.until(`text("#signin-message").includes("Wrong token")`, "the wrong-token message")
	b.expect(`document.querySelector("#app-view").hidden && !document.querySelector("#session-list").children.length &&
		sessionStorage.length === 0`, "nothing shown for a wrong token")
	b.shot("1-wrong-token")

	b.signIn(tr.Token)
	b.until(`!document.querySelector("#app-view").hidden && document.querySelector("#create-agent").options.length > 0`, "signed in")
	b.expect(fmt.Sprintf(`sessionStorage.getItem("tether.token") === %q && !location.href.includes(%q)`, tr.Token, tr.Token), "the token kept for the tab, not in the URL")

	// A new session whose first turn streams its reply slowly.
	b.navigate("the new session's form", chromedp.Click(chromedp.CSS(`#new-session`)))
	b.hasNames("New session", "Agent", "Workspace", "Prompt", "Send")
	ws := newWorkspaceID("console")
	b.run(chromedp.SetValue(chromedp.CSS(`#create-agent`), "claude"),
		chromedp.SendKeys(chromedp.CSS(`#create-workspace`), ws),
		chromedp.SendKeys(chromedp.CSS(`#create-prompt`), "SLOW"))
	b.shot("2-new-session")
	b.run(chromedp.Click(chromedp.CSS(`#create-form button[type=submit]`)))
	b.until(`agentText().includes("tick 3")`, "the reply streaming in")
	b.expect(`!agentText().includes("tick 100") && !document.querySelector("[data-turn-end]")`, "the reply seen before the turn ends")
	b.until(`[...document.querySelectorAll("#session-list .session-ws")].some(e => e.textContent === `+jsString(ws)+`)`, "the session listed")
	b.shot("3-streaming")

	// The connection dropped mid-turn: the stream resumes after the last seq.
	conns := proxy.accepted.Load()
	proxy.drop()
	b.until(`agentText().includes("tick 30")`, "the reply after a dropped connection")
	if proxy.accepted.Load() == conns {
		t.Fatal("the console did not reconnect after its connection was dropped")
	}
	// Reloaded mid-turn: the whole session again, from seq 1.
	b.expect(`!agentText().includes("tick 100")`, "the turn still running at the reload")
	b.run(chromedp.Reload())
	b.until(`document.querySelector("[data-turn-end]") !== null`, "the turn's end after the reload")
	ticks := make([]string, 100)
	for i := range ticks {
		ticks[i] = fmt.Sprintf("tick %d", i+1)
	}
	b.expect(`agentText() === `+jsString(strings.Join(ticks, " ")), "the whole reply, once")
	b.expect(`count("[data-type=user_message]") === 1 && count("[data-type=message]") === 1 && count("[data-turn-end]") === 1`,
		"every item once after a drop and a reload")

	// Approve a command and see it run; deny one and see it refused.
	dir := tr.WorkspaceDir(ws)
	b.prompt(bashPrompt("touch via-console.txt"))
	b.until(`count("[data-approval] [data-status=pending]") === 1`, "the approval")
	b.hasNames("Approve", "Deny", "Interrupt")
	b.expect(`text("[data-approval] .text") === "Bash: touch via-console.txt"`, "the approval's title")
	// The list above the session shows the approval too, once its next
	// fetch is back (late under load): at phone width that adds a line
	// above the button, which must not move between finding it and the
	// click.
	b.until(`text("#approvals-summary") === "1 approval waiting" && count("#session-list .pending") === 1`, "the list showing the approval")
	b.shot("4-approval")
	// At phone width: nothing wider than the screen, and the buttons work.
	b.run(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	b.expect(`document.documentElement.scrollWidth <= 390`, "no horizontal scrolling at phone width")
	b.run(chromedp.Evaluate[chromedp.Void](`document.querySelector("[data-approval]").scrollIntoView({block: "center"})`))
	b.shot("5-phone-approval")
	// The button itself in the middle of the screen, clear of the sticky
	// composer, right before the click: the session list above may have
	// been redrawn since.
	b.run(chromedp.Evaluate[chromedp.Void](`document.querySelector("[data-approval] button:not(.deny)").scrollIntoView({block: "center"})`),
		chromedp.Click(chromedp.CSS(`[data-approval] button:not(.deny)`)))
	b.until(`itemStatus("command") === "completed" && count("[data-turn-end]") === 2`, "the approved command run")
	b.run(chromedp.EmulateViewport(1280, 900))
	b.expect(`text("[data-approval] .resolution").startsWith("Approved")`, "the approval shown approved")
	if _, err := os.Stat(filepath.Join(dir, "via-console.txt")); err != nil {
		t.Fatalf("the approved command did not run: %v", err)
	}
	b.shot("6-approved")

	b.prompt(bashPrompt("touch refused.txt"))
	b.until(`count("[data-approval] [data-status=pending]") === 1`, "the second approval")
	b.run(chromedp.Click(chromedp.CSS(`[data-approval]:has([data-status=pending]) button.deny`)))
	b.until(`itemStatus("command") === "declined" && count("[data-turn-end]") === 3`, "the denied command refused")
	if _, err := os.Stat(filepath.Join(dir, "refused.txt")); !os.IsNotExist(err) {
		t.Fatalf("the denied command ran: %v", err)
	}
	b.shot("7-denied")

	// Markup and script from the agent are shown as text, never run.
	reply := `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script><b id="inj-reply">bold</b>`
	b.prompt("SAY " + reply)
	b.until(`count("[data-turn-end]") === 4`, "the markup reply")
	b.expect(`agentText() === `+jsString(reply), "the reply's markup shown as text")
	out := `<b id="inj-out">out</b><img src=x onerror="window.pwned=3">`
	b.prompt(bashPrompt("echo '" + out + "'"))
	// Claude Code runs a read-only command such as echo without asking;
	// should it ask, the console approves it.
	b.until(`count("[data-turn-end]") === 5 || count("[data-approval] [data-status=pending]") === 1`, "the markup command")
	if b.string(`String(count("[data-approval] [data-status=pending]"))`) == "1" {
		b.run(chromedp.Click(chromedp.CSS(`[data-approval]:has([data-status=pending]) button:not(.deny)`)))
	}
	b.until(`count("[data-turn-end]") === 5`, "the markup command's turn")
	b.expect(`lastItem("command").querySelector(".output").textContent.includes(`+jsString(out)+`)`, "the command's markup output shown as text")
	b.expect(`!document.querySelector("#inj-reply, #inj-out, #events img, #events script, #events b") && window.pwned === undefined`,
		"no markup from the agent made into elements, no script run")
	b.shot("8-markup-as-text")

	// A file written, shown as a diff.
	b.prompt("USE_WRITE notes.txt")
	b.until(`count("[data-approval] [data-status=pending]") === 1`, "the Write approval")
	b.run(chromedp.Click(chromedp.CSS(`[data-approval]:has([data-status=pending]) button:not(.deny)`)))
	b.until(`itemStatus("file_change") === "completed" && count("[data-turn-end]") === 6`, "the file written")
	b.expect(`text("[data-type=file_change] .diff .add") === `+jsString("+"+fakeanthropic.WriteContent), "the write shown as an added line")
	// Only the change: the approval's title holds the test's temporary
	// directory (and so the steps after show the top of the session).
	b.shot("9-file-diff", `[data-type=file_change]`)

	// Interrupt a running turn.
	b.prompt("SLOW")
	b.until(`agentText().includes("tick 2")`, "the second slow reply")
	// The list's fetch from before the turn began may land after it and
	// show the session idle, which disables Interrupt until the next one
	// (late under load): the list showing the turn running comes after.
	b.until(`text("#session-list [aria-current=true] .state") === "running" && !document.querySelector("#interrupt").disabled`,
		"the turn shown running, Interrupt enabled")
	b.run(chromedp.Click(chromedp.CSS(`#interrupt`)))
	b.until(`document.querySelector("[data-turn-end=interrupted]") !== null`, "the interrupted turn")

	// The session ended elsewhere: the open console says why.
	id := b.string(`location.hash.slice("#session=".length)`)
	if code := api.call("DELETE", "/v1/sessions/"+id, "", nil, ""); code != 204 {
		t.Fatalf("close: %d", code)
	}
	b.until(`!document.querySelector("#session-ended").hidden && text("#session-ended").includes("closed")`, "why the session ended")
	b.expect(`document.querySelector("#prompt").disabled && document.querySelector("#interrupt").disabled`, "an ended session takes no prompts")
	b.until(`text("#session-list .state") === "ended" && !count("#session-list .pending")`, "the list showing the session ended")
	b.run(chromedp.Evaluate[chromedp.Void](`document.querySelector(".pane").scrollTop = 0`))
	b.shot("10-ended")

	// Another agent: a bad workspace id gets the runner's reason; then a
	// question answered with an option, and an approval allowed for the
	// whole session.
	b.navigate("the new session's form", chromedp.Click(chromedp.CSS(`#new-session`)))
	b.run(chromedp.SetValue(chromedp.CSS(`#create-agent`), "mock"),
		chromedp.SendKeys(chromedp.CSS(`#create-workspace`), "no/such id"),
		chromedp.SendKeys(chromedp.CSS(`#create-prompt`), "ASK_QUESTION REQUEST_APPROVAL"),
		chromedp.Click(chromedp.CSS(`#create-form button[type=submit]`)))
	b.until(`text("#create-message").includes("invalid id")`, "the bad workspace id refused")
	b.run(chromedp.Evaluate[chromedp.Void](`document.querySelector("#create-workspace").value = `+jsString(newWorkspaceID("console"))),
		chromedp.Click(chromedp.CSS(`#create-form button[type=submit]`)))
	b.until(`count("[data-approval] .choices input") === 3`, "the question")
	b.hasNames("Answer", "Deny", "Red", "Green", "Blue")
	b.run(chromedp.Click(chromedp.CSS(`[data-approval] .choices input[value=green]`)),
		chromedp.Click(chromedp.CSS(`[data-approval]:has([data-status=pending]) button:not(.deny)`)))
	b.until(`count("[data-approval] [data-status=pending]") === 1 && count("[data-approval] select") === 1`, "the tool approval with scopes")
	b.hasNames("Scope")
	b.run(chromedp.SetValue(chromedp.CSS(`[data-approval]:has([data-status=pending]) select`), "session"),
		chromedp.Click(chromedp.CSS(`[data-approval]:has([data-status=pending]) button:not(.deny)`)))
	b.until(`count("[data-turn-end=completed]") === 1`, "the mock's turn")
	b.expect(`agentText().includes("You chose: Green.") && text("[data-type=question] .answer") === "Answer: Green"`, "the answer reached the agent")
	b.expect(`[...document.querySelectorAll("[data-approval] .resolution")].map(e => e.textContent).join("|").includes("Approved for this session")`,
		"the approval allowed for the session")
	b.until(`[...document.querySelectorAll("#session-list .agent")].map(e => e.textContent).sort().join() === "claude,mock"`,
		"sessions of both agents listed")
	b.until(`!count("#session-list .pending") && text("#session-list [aria-current=true] .state") === "idle"`, "the list up to date")
	b.shot("12-question")
	b.expect(`!performance.getEntriesByType("resource").some(e => e.name.includes(`+jsString(tr.Token)+`)) &&
		performance.getEntriesByType("resource").some(e => e.name.endsWith("/events"))`, "no URL the page fetched has the token in it")
}

// A token the runner stops accepting while the console is open signs the
// console out, with why: here the runner behind the console's address is
// replaced by one with another token, as after a restart that rotated
// the old token out.
func TestRealCLIConsoleRevokedToken(t *testing.T) {
	timed(t)
	chromium := requireChromium(t)
	tr := startRunner(t, false)
	proxy := startCutProxy(t, runnerAddr(tr))
	b := openBrowser(t, chromium)

	b.run(chromedp.Navigate("http://" + proxy.Addr() + "/"))
	b.signIn(tr.Token)
	b.until(`!document.querySelector("#app-view").hidden && document.querySelector("#create-agent").options.length > 0`, "signed in")
	b.navigate("the new session's form", chromedp.Click(chromedp.CSS(`#new-session`)))
	b.run(chromedp.SetValue(chromedp.CSS(`#create-agent`), "claude"),
		chromedp.SendKeys(chromedp.CSS(`#create-workspace`), newWorkspaceID("console")),
		chromedp.SendKeys(chromedp.CSS(`#create-prompt`), "hello there"),
		chromedp.Click(chromedp.CSS(`#create-form button[type=submit]`)))
	b.until(`agentText().includes("Hello! You said: hello there")`, "the reply")

	rotated := startRunner(t, false)
	proxy.retarget(runnerAddr(rotated))
	proxy.drop()
	b.until(`!document.querySelector("#signin-view").hidden && text("#signin-message").includes("no longer accepts your token")`,
		"signed out with why")
	b.expect(`document.querySelector("#app-view").hidden && sessionStorage.getItem("tether.token") === null &&
		!document.querySelector("#events").children.length`, "nothing of the runner left on the page")
	b.shot("11-token-revoked")
}

func requireChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium to test the console in (apt-get install chromium)")
	return ""
}

func runnerAddr(tr *testRunner) string {
	return strings.TrimSuffix(strings.TrimPrefix(tr.URL, "ws://"), "/sessions")
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// browser is one headless Chromium tab, driven over the DevTools protocol.
type browser struct {
	t   *testing.T
	ctx context.Context
}

// browserHelpers are functions the tests' expressions use, defined on every page load.
const browserHelpers = `
window.text = (sel) => { const e = document.querySelector(sel); return e ? e.textContent : ""; };
window.count = (sel) => document.querySelectorAll(sel).length;
window.agentText = () => [...document.querySelectorAll("[data-type=message] .text")].map(e => e.textContent).pop() || "";
window.lastItem = (type) => [...document.querySelectorAll("[data-type=" + type + "]")].pop() || document.createElement("div");
window.itemStatus = (type) => { const s = lastItem(type).querySelector("[data-status]"); return s ? s.dataset.status : ""; };
`

func openBrowser(t *testing.T, execPath string) *browser {
	t.Helper()
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(execPath), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-dev-shm-usage", true))
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
	// The first call starts the browser, which lives as long as the
	// context of that call: it gets no timeout.
	b.first(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: browserHelpers})
		return err
	}))
	return b
}

func (b *browser) first(action chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, action); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

func evaluate[T any](b *browser, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// until waits up to a minute for expr to be true.
func (b *browser) until(expr, what string) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		var ok bool
		if ok, lastErr = evaluate[bool](b, expr); lastErr == nil && ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	page, _ := evaluate[string](b, `document.querySelector("#app-view").hidden ? text("body") : text("#session-view")`)
	b.t.Fatalf("no %s within a minute (%s; last error %v); the page shows:\n%s", what, expr, lastErr, page)
}

// navigate runs actions that change the page's location (a click on New
// session) and waits until the page has handled the change. The console
// handles it twice, at the click and at the hashchange event after, and
// each time puts the focus in the form's first field: under load the
// event comes late, and keys sent to another field meanwhile would jump
// to that one.
func (b *browser) navigate(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	// Listeners run in order: this one after the console's own.
	b.run(chromedp.Evaluate[chromedp.Void](`window.navigated = false;
		addEventListener("hashchange", () => { window.navigated = true; }, {once: true})`))
	b.run(actions...)
	b.until(`window.navigated`, what)
}

func (b *browser) expect(expr, what string) {
	b.t.Helper()
	if ok, err := evaluate[bool](b, expr); err != nil || !ok {
		b.t.Fatalf("%s: %s is not true (%v)", what, expr, err)
	}
}

func (b *browser) string(expr string) string {
	b.t.Helper()
	s, err := evaluate[string](b, expr)
	if err != nil {
		b.t.Fatal(err)
	}
	return s
}

func (b *browser) signIn(token string) {
	b.t.Helper()
	b.run(chromedp.Evaluate[chromedp.Void](`document.querySelector("#token").value = ""`),
		chromedp.SendKeys(chromedp.CSS(`#token`), token),
		chromedp.Click(chromedp.CSS(`#signin-form button[type=submit]`)))
}

func (b *browser) prompt(text string) {
	b.t.Helper()
	b.run(chromedp.SetValue(chromedp.CSS(`#prompt`), text),
		chromedp.Click(chromedp.CSS(`#prompt-form button[type=submit]`)))
}

// hasNames checks the page's accessibility tree (what a screen reader
// gets) has a control of each name.
func (b *browser) hasNames(names ...string) {
	b.t.Helper()
	var nodes []*accessibility.Node
	b.run(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		res, err := cdp.Call(ctx, t, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		nodes = res.Nodes
		return err
	}))
	controls := map[string]bool{"button": true, "textbox": true, "combobox": true, "radio": true, "checkbox": true}
	have := map[string]bool{}
	for _, n := range nodes {
		var role, name string
		if n.Ignored || n.Role == nil || n.Name == nil {
			continue
		}
		_ = json.Unmarshal(n.Role.Value, &role)
		_ = json.Unmarshal(n.Name.Value, &name)
		if controls[role] {
			have[name] = true
		}
	}
	for _, name := range names {
		if !have[name] {
			b.t.Errorf("no control named %q on the page (have %v)", name, have)
		}
	}
}

// shot saves a screenshot of the page, or of the element of an optional
// selector, when TETHER_CONSOLE_SCREENSHOTS names a directory.
func (b *browser) shot(name string, element ...string) {
	b.t.Helper()
	dir := os.Getenv("TETHER_CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	shoot := chromedp.CaptureScreenshot()
	if len(element) > 0 {
		shoot = chromedp.Screenshot(chromedp.CSS(element[0]))
	}
	png, err := chromedp.Run(ctx, shoot)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// cutProxy relays TCP connections on loopback to a target it can change,
// and cuts every open connection on demand: a dropped network, for real.
type cutProxy struct {
	ln       net.Listener
	accepted atomic.Int32
	mu       sync.Mutex
	target   string
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		p.drop()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) Addr() string { return p.ln.Addr().String() }

func (p *cutProxy) retarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		up, err := net.DialTimeout("tcp", target, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.track(c, up)
		p.wg.Go(func() { p.pipe(c, up) })
		p.wg.Go(func() { p.pipe(up, c) })
	}
}

func (p *cutProxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
}

// pipe copies one way; when either side ends, both are closed.
func (p *cutProxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// drop cuts every open connection.
func (p *cutProxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// A session a host opens with the SDK's Runner option (protocol v1) is in
// the console like any other: listed as it starts, and its turn streams
// live there while the host reads it over its own connection.
func TestRealCLIConsoleShowsV1Session(t *testing.T) {
	timed(t)
	chromium := requireChromium(t)
	tr := startRunner(t, false)
	b := openBrowser(t, chromium)
	b.run(chromedp.Navigate("http://" + runnerAddr(tr) + "/"))
	b.signIn(tr.Token)
	b.until(`!document.querySelector("#app-view").hidden`, "signed in")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Partial messages stream the reply's text as it comes; without them
	// it arrives whole, a moment before the turn's end.
	c, err := claude.Connect(ctx, claude.Options{IncludePartialMessages: true,
		Runner: &claude.RunnerOptions{URL: tr.URL, Token: tr.Token, WorkspaceID: newWorkspaceID("v1-console")}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := c.SessionID()
	row := fmt.Sprintf(`#session-list li[data-session=%q] a`, id)
	b.until(fmt.Sprintf(`!!document.querySelector(%q)`, row), "the v1 session listed")
	b.navigate("the v1 session", chromedp.Click(chromedp.CSS(row)))
	if err := c.Query(ctx, "SLOW"); err != nil {
		t.Fatal(err)
	}
	b.until(`agentText().includes("tick 3")`, "the v1 session's reply streaming in the console")
	b.expect(`!document.querySelector("[data-turn-end]")`, "seen live, before the turn ends")
	res, err := claude.FinalResult(c.Receive(ctx))
	if err != nil || res.IsError {
		t.Fatalf("the host's own turn: %+v %v", res, err)
	}
	b.until(`!!document.querySelector("[data-turn-end]")`, "the turn's end in the console")
}
