package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakegemini"
)

// tether run --agent gemini on this machine, Gemini CLI against a fake
// Gemini API: the reply on the terminal, the conversation resumed by
// another process, a shell command run after
// --approve=allow, and --json's canonical events with the command
// declined after --approve=deny.
func TestRealCLIRunGeminiLocally(t *testing.T) {
	cli := fakegemini.RequireCLI(t)
	fake, err := fakegemini.Start(fakegemini.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	env := fakegemini.Env(t.TempDir(), fake.URL())
	dir := t.TempDir()
	r := tether(t, dir, "", env, "run", "--agent", "gemini", "--cli", cli, "SAY hello from gemini")
	if r.code != 0 || !strings.Contains(r.stdout, "hello from gemini") {
		t.Fatalf("text: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// resume: the conversation goes on in another process, and the
	// model is sent its first turn again
	m := regexp.MustCompile(`session (\S+)\s*$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no id to resume in\n%s", r.stdout)
	}
	before := len(fake.Requests())
	r = tether(t, dir, "", env, "run", "--agent", "gemini", "--cli", cli, "--resume", m[1], "SAY again")
	if r.code != 0 || !strings.Contains(r.stdout, "again") {
		t.Fatalf("resume: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	carried := false
	for _, req := range fake.Requests()[before:] {
		carried = carried || (strings.Contains(string(req.Body), "hello from gemini") && strings.Contains(string(req.Body), "SAY again"))
	}
	if !carried {
		t.Fatal("the resumed turn's request does not carry the first turn")
	}
	r = tether(t, dir, "", env, "run", "--agent", "gemini", "--cli", cli, "--approve=allow", "USE_SHELL touch made-by-gemini")
	if _, err := os.Stat(filepath.Join(dir, "made-by-gemini")); r.code != 0 || err != nil {
		t.Fatalf("shell: %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	r = tether(t, dir, "", env, "run", "--agent", "gemini", "--cli", cli, "--json", "--approve=deny", "USE_SHELL touch refused")
	events := parseEvents(t, r.stdout)
	var cmd *agent.Item
	for _, e := range events {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand {
			cmd = e.Item
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "refused")); err == nil || cmd == nil || cmd.Status != agent.ItemDeclined ||
		events[0].Kind != agent.KindSessionStarted || events[0].Session.Agent != "gemini" {
		t.Fatalf("denied: %d command %+v\n%s", r.code, cmd, r.stderr)
	}
}

// A sandboxed `tether serve` runner offers gemini and runs its turns: a
// text reply, a shell command allowed and one denied (`tether run --agent
// gemini --runner`); the agent gets a key proxy and a stand-in, and the
// model API still sees the runner's real key.
func TestRealCLIServeGeminiSandboxed(t *testing.T) {
	cli := fakegemini.RequireCLI(t)
	fake, err := fakegemini.Start(fakegemini.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	opHome := t.TempDir()
	binWith(t, "node", "bwrap") // skips without them
	// fakegemini.Env's PATH: the system's and node's directory.
	env := envWith(fakegemini.Env(opHome, fake.URL())[0], "HOME="+opHome,
		"GEMINI_API_KEY=gemini-runner-key", "GOOGLE_GEMINI_BASE_URL="+fake.URL())
	p := startServe(t, env, "--sandbox", "on", "--cli", "gemini="+cli)
	offered, unavailable := agentsOf(t, p)
	if _, ok := offered["gemini"]; !ok {
		t.Fatalf("gemini not offered: %v\n%s", unavailable["gemini"], p.log())
	}
	if out := turnOf(t, p, "gemini", "SAY hello from a sandboxed gemini"); !strings.Contains(out, "hello from a sandboxed gemini") {
		t.Fatalf("gemini's turn:\n%s\nrunner:\n%s", out, p.log())
	}
	for _, c := range []struct {
		approve string
		want    agent.ItemStatus
	}{{"allow", agent.ItemDone}, {"deny", agent.ItemDeclined}} {
		r := tether(t, t.TempDir(), "", cleanEnv(), "run", "--agent", "gemini", "--runner", "http://"+p.addr, "--runner-token", testToken,
			"--workspace", "gemini-"+c.approve, "--json", "--approve="+c.approve, "USE_SHELL touch made-"+c.approve)
		if r.stdout == "" {
			t.Fatalf("--approve=%s: %d no events\n%s\nrunner:\n%s", c.approve, r.code, r.stderr, p.log())
		}
		var cmd *agent.Item
		for _, e := range parseEvents(t, r.stdout) {
			if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand {
				cmd = e.Item
			}
		}
		if cmd == nil || cmd.Status != c.want || cmd.Command.Command != "touch made-"+c.approve {
			t.Fatalf("--approve=%s: %d command %+v\n%s\nrunner:\n%s", c.approve, r.code, cmd, r.stderr, p.log())
		}
	}
	reqs := fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("the fake API got no request")
	}
	for _, r := range reqs {
		if got := r.Header.Get("X-Goog-Api-Key"); got != "gemini-runner-key" {
			t.Fatalf("the API got key %q, want the runner's", got)
		}
	}
}
