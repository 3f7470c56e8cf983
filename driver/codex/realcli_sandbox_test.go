package codex_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/codex"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/sandbox"
)

// Under bubblewrap: a text turn and an approved shell command work with
// only the workspace and the home writable and the other workspaces and
// the runner's data hidden.
func TestRealCLISandboxed(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skipf("bubblewrap is not installed: %v", err)
	}
	bin := testenv.RequireCodexCLI(t)
	// Not under /tmp: the sandbox has a /tmp of its own.
	base, err := os.MkdirTemp("/var/tmp", "tether-codex-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	root, homes, data := filepath.Join(base, "workspaces"), filepath.Join(base, "homes"), filepath.Join(base, "data")
	ws, home, other := filepath.Join(root, "a"), filepath.Join(homes, "a"), filepath.Join(root, "b")
	for _, d := range []string{ws, home, other, data} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(other, "secret"), []byte("no"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := fakeopenai.Start(fakeopenai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	env, err := testenv.CodexEnv(home, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	drv, err := codex.New(driver.Config{CLIPath: bin, Env: env, Sandbox: &sandbox.Policy{Hide: []string{root, homes, data}}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r := &rig{t: t, srv: srv, drv: drv, home: home, ws: ws}
	s, w := r.start(agent.StartRequest{})
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "SAY boxed"}); err != nil {
		t.Fatal(err)
	}
	end, at := w.turnEnd(0)
	if end.Turn.Text != "boxed" {
		t.Fatalf("turn %+v %+v\n%s", end.Turn, end.Error, w.dump())
	}
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "USE_SHELL ls " + other + "; echo inside > probe.txt; cat probe.txt"}); err != nil {
		t.Fatal(err)
	}
	req, _ := w.until(at+1, isApproval)
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: req.Approval.ID, Decision: agent.Allow}); err != nil {
		t.Fatal(err)
	}
	w.turnEnd(at + 1)
	cmd, _ := w.until(at+1, func(e agent.Event) bool {
		return e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand
	})
	if cmd.Item.Status != agent.ItemDone || !strings.Contains(cmd.Item.Command.Output, "inside") || strings.Contains(cmd.Item.Command.Output, "secret") {
		t.Errorf("command %+v %+v\n%s", cmd.Item, cmd.Item.Command, w.dump())
	}
	if b, err := os.ReadFile(filepath.Join(ws, "probe.txt")); err != nil || string(b) != "inside\n" {
		t.Errorf("probe.txt in the workspace: %q, %v", b, err)
	}
}
