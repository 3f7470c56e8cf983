package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/sandbox"
	"github.com/tetherhq/tether/server"
)

// operatorSecrets are files a runner's machine holds that no agent may
// read, each with a marker that must never show in a command's output:
// the runner's token file and TLS key where operators put them (under
// /etc), another user's SSH key, and this source tree.
type operatorSecrets struct {
	etcDir, tokenFile, tlsKey, otherHome, sshKey, tree string
	markers                                            []string
}

func placeSecrets(t *testing.T, token string) *operatorSecrets {
	t.Helper()
	etcDir, err := os.MkdirTemp("/etc", "tether-e2e-")
	if err != nil {
		t.Skipf("cannot place an operator's files under /etc (not root?): %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(etcDir) })
	otherHome, err := os.MkdirTemp("/home", "tether-e2e-user-")
	if err != nil {
		t.Skipf("cannot make another user's home under /home: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(otherHome) })
	tree, ok := testenv.ModuleRoot()
	if !ok {
		t.Fatal("no module root")
	}
	s := &operatorSecrets{etcDir: etcDir, tokenFile: filepath.Join(etcDir, "tokens"), tlsKey: filepath.Join(etcDir, "tls.key"),
		otherHome: otherHome, sshKey: filepath.Join(otherHome, ".ssh", "id_ed25519"), tree: tree}
	write := func(path, content string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(s.tokenFile, "# the runner's tokens\n"+token+"\n")
	write(s.tlsKey, "-----BEGIN PRIVATE KEY-----\nTLS-KEY-MARKER\n")
	write(s.sshKey, "-----BEGIN OPENSSH PRIVATE KEY-----\nSSH-KEY-MARKER\n")
	s.markers = []string{token, "TLS-KEY-MARKER", "SSH-KEY-MARKER", "module github.com/tetherhq/tether"}
	return s
}

// The sandbox shows an agent only what it needs, the same for every agent
// kind: through each real CLI's own shell tool, a command that tries to
// read the machine's secrets finds none of them, finds no model API key
// anywhere it can look, and reaches no loopback server; and a normal
// session still works: git, node and python run, the workspace is
// writable.
func TestRealCLIClaudeSandboxView(t *testing.T)   { sandboxViewJourney(t, "claude") }
func TestRealCLICodexSandboxView(t *testing.T)    { sandboxViewJourney(t, "codex") }
func TestRealCLIOpenCodeSandboxView(t *testing.T) { sandboxViewJourney(t, "opencode") }

func sandboxViewJourney(t *testing.T, kind string) {
	timed(t)
	requireBwrap(t)
	token := randomToken()
	secrets := placeSecrets(t, token)
	r := startAgentRunner(t, kind, true, func(cfg *server.Config) {
		cfg.Auth = auth.LoadOptions{Getenv: func(string) string { return "" }, File: secrets.tokenFile}
	})
	r.Token = token
	r.api.token = token
	ws := newWorkspaceID(kind)
	var info struct{ ID string }
	if code := r.api.call("POST", "/v1/sessions", `{"agent":"`+kind+`","workspace_id":"`+ws+`"}`, &info, ""); code != 201 {
		t.Fatalf("create: %d\n%s", code, r.logs.String())
	}
	events := r.api.stream("/v1/sessions/" + info.ID + "/events")
	untilKind(t, events, agent.KindSessionStarted)
	// shell runs cmd through the agent's shell tool, approved, and
	// returns its output. Whatever runs it, the host sees the model's own
	// command: no event shows the sandbox's wrapping.
	shell := func(t *testing.T, cmd string) string {
		t.Helper()
		var out string
		ran := false
		for _, e := range r.turn(t, info.ID, events, r.shell(cmd), agent.Allow) {
			if b, _ := json.Marshal(e); bytes.Contains(b, []byte(sandbox.WrappedMarker)) || bytes.Contains(b, []byte(sandbox.ToolShellPath)) {
				t.Errorf("an event shows the sandbox's wrapping: %s", b)
			}
			if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand {
				// (Codex reports its own `bash -lc …` line.)
				if r.kind != "codex" && e.Item.Command.Command != cmd {
					t.Errorf("the command item holds %q, not the model's command %q", e.Item.Command.Command, cmd)
				}
				out, ran = e.Item.Command.Output, true
			}
		}
		if !ran {
			t.Fatalf("the command did not run: %s", cmd)
		}
		return out
	}

	t.Run("Secrets", func(t *testing.T) {
		cmd := strings.Join([]string{
			"head -c 64 /etc/shadow",
			"cat " + secrets.tokenFile + " " + secrets.tlsKey,
			"ls -A " + secrets.etcDir,
			"cat " + secrets.sshKey,
			"ls -A /root /home /var",
			"cat " + filepath.Join(secrets.tree, "go.mod"),
			"ls -A " + r.Data,
			"ls -A /etc | tr '\\n' ' '",
		}, " 2>&1; ") + " 2>&1; echo END"
		out := shell(t, cmd)
		for _, m := range secrets.markers {
			if strings.Contains(out, m) {
				t.Errorf("the agent read %q:\n%s", m, out)
			}
		}
		for _, never := range []string{"shadow\n", " shadow ", "sudoers", "npmrc", "events.db", "\n.ssh"} {
			if strings.Contains(out, never) {
				t.Errorf("the agent saw %q:\n%s", never, out)
			}
		}
		if !strings.Contains(out, "END") || !strings.Contains(out, "No such file or directory") || !strings.Contains(out, "passwd") {
			t.Errorf("the command's output:\n%s", out)
		}
	})

	t.Run("NoKey", func(t *testing.T) {
		// The key the runner holds is sk-fake; the agent has a proxy's
		// token at most. The pattern is written sk-[f]ake, so that no
		// command line of the probe itself (grep's included) holds the key.
		out := shell(t, `env | grep -c 'sk-[f]ake'; cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c 'sk-[f]ake'; `+
			`grep -rls 'sk-[f]ake' /etc /tmp /run "$HOME" . 2>/dev/null | head -3; echo END`)
		if got := strings.Fields(out); len(got) != 3 || got[0] != "0" || got[1] != "0" || got[2] != "END" {
			t.Errorf("the key is within the agent's reach: %q", out)
		}
	})

	t.Run("Loopback", func(t *testing.T) {
		l := listen(t)
		before, asked := l.accepted.Load(), len(r.requests())
		out := shell(t, l.connectScript())
		if l.accepted.Load() != before || !strings.Contains(out, "refused") {
			t.Errorf("a command reached a loopback server: %q, %d connections", out, l.accepted.Load()-before)
		}
		// The agent itself still reaches its model through the runner's
		// key proxy: the command's output went back to the model API, with
		// the runner's key.
		told := false
		for _, req := range r.requests()[asked:] {
			if bytes.Contains(req.Body, []byte("refused")) {
				told = true
				if got := req.Header.Get(r.keyHeader); got != r.key {
					t.Errorf("the model API got %s %q", r.keyHeader, got)
				}
			}
		}
		if !told {
			t.Error("the model API was not sent the command's output")
		}
	})

	t.Run("Works", func(t *testing.T) {
		out := shell(t, `set -e; git init -q repo && cd repo && echo x > f && git add f && `+
			`git -c user.email=a@example.com -c user.name=a commit -qm first && git log --format=%s; `+
			`node -e 'console.log("node", 6*7)'; python3 -c 'print("python", 6*7)'; id -un; echo ok > ../written.txt && cat ../written.txt`)
		for _, want := range []string{"first", "node 42", "python 42", "agent", "ok"} {
			if !strings.Contains(out, want) {
				t.Errorf("a normal command failed, no %q in:\n%s", want, out)
			}
		}
		if !exists(filepath.Join(r.WorkspaceDir(ws), "written.txt")) || !exists(filepath.Join(r.WorkspaceDir(ws), "repo", ".git")) {
			t.Error("the command's files are not in the workspace on the host")
		}
	})
	if code := r.api.call("DELETE", "/v1/sessions/"+info.ID, "", nil, ""); code != 204 {
		t.Fatalf("close: %d", code)
	}
}

// Control: without the sandbox the same command does read the operator's
// files, so the refusals above are the sandbox's doing.
func TestRealCLIClaudeSandboxViewControl(t *testing.T) {
	timed(t)
	token := randomToken()
	secrets := placeSecrets(t, token)
	r := startAgentRunner(t, "claude", false)
	ws := newWorkspaceID("claude")
	var info struct{ ID string }
	if code := r.api.call("POST", "/v1/sessions", `{"agent":"claude","workspace_id":"`+ws+`"}`, &info, ""); code != 201 {
		t.Fatalf("create: %d", code)
	}
	events := r.api.stream("/v1/sessions/" + info.ID + "/events")
	var out string
	for _, e := range r.turn(t, info.ID, events, r.shell("cat "+secrets.tokenFile+" "+secrets.sshKey), agent.Allow) {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand {
			out = e.Item.Command.Output
		}
	}
	if !strings.Contains(out, token) || !strings.Contains(out, "SSH-KEY-MARKER") {
		t.Fatalf("without the sandbox the command read: %q", out)
	}
}
