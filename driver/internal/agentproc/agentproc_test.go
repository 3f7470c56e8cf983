package agentproc_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/driver/internal/agentproc"
	"github.com/tetherhq/tether/sandbox"
	"github.com/tetherhq/tether/transport"
)

func TestWriteHomeFiles(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".config/opencode/opencode.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := agentproc.WriteHomeFiles(home, map[string][]byte{".config/opencode/opencode.json": []byte("{}"), "a/b/c": []byte("x")}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if data, _ := os.ReadFile(path); err != nil || st.Mode().Perm() != 0o600 || string(data) != "{}" {
		t.Fatalf("file: %v %v %q", st.Mode(), err, data)
	}
	if dir, _ := os.Stat(filepath.Join(home, "a/b")); dir.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", dir.Mode())
	}
	for _, bad := range []string{"../x", "/etc/x", ".", "a/../../x"} {
		if err := agentproc.WriteHomeFiles(home, map[string][]byte{bad: nil}); !errors.Is(err, agentproc.ErrHomeFile) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestEnv(t *testing.T) {
	env := []string{"A=1", "B=2", "A=3"}
	if v, ok := agentproc.LookupEnv(env, "A"); !ok || v != "3" {
		t.Errorf("LookupEnv A = %q %v", v, ok)
	}
	if _, ok := agentproc.LookupEnv(env, "C"); ok {
		t.Error("LookupEnv found C")
	}
	set := agentproc.SetEnv(env, "A", "4")
	if !slices.Equal(set, []string{"B=2", "A=4"}) || !slices.Equal(env, []string{"A=1", "B=2", "A=3"}) {
		t.Errorf("SetEnv = %q (env now %q)", set, env)
	}
	if m := agentproc.EnvMap(env); m["A"] != "3" || m["B"] != "2" || len(m) != 2 {
		t.Errorf("EnvMap = %v", m)
	}
}

// A CLI installed by npm is a link into node_modules: the sandbox must
// show the whole tree, where the link and the package behind it live.
func TestCLIDirs(t *testing.T) {
	root := t.TempDir()
	pkg := filepath.Join(root, "node_modules", "@openai", "codex", "bin")
	bin := filepath.Join(root, "node_modules", ".bin")
	for _, d := range []string{pkg, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pkg, "codex.js"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(bin, "codex")
	if err := os.Symlink("../@openai/codex/bin/codex.js", link); err != nil {
		t.Fatal(err)
	}
	if got := agentproc.CLIDirs(link, nil); !slices.Equal(got, []string{filepath.Join(root, "node_modules")}) {
		t.Errorf("npm CLI: %v", got)
	}
	if got := agentproc.CLIDirs("/usr/bin/codex", nil); !slices.Equal(got, []string{"/usr/bin"}) {
		t.Errorf("plain CLI: %v", got)
	}
}

// A script's interpreter outside the system directories (a node under
// /opt or a version manager's tree) is shown too: its installation, found
// on the PATH the CLI runs with; a system one (/usr/bin/env sh) adds
// nothing.
func TestCLIDirsInterpreter(t *testing.T) {
	root := t.TempDir()
	nodeHome := filepath.Join(root, "node-v24")
	nodeBin := filepath.Join(nodeHome, "bin")
	cliDir := filepath.Join(root, "cli")
	for _, d := range []string{nodeBin, cliDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(nodeBin, "node"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(cliDir, "agent.js")
	if err := os.WriteFile(cli, []byte("#!/usr/bin/env -S node --no-warnings\nconsole.log(1)\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + nodeBin + ":/usr/bin:/bin"}
	if got := agentproc.CLIDirs(cli, env); !slices.Equal(got, []string{cliDir, nodeHome}) {
		t.Errorf("node outside the system: %v", got)
	}
	if err := os.WriteFile(cli, []byte("#!/usr/bin/env sh\necho 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := agentproc.CLIDirs(cli, env); !slices.Equal(got, []string{cliDir}) {
		t.Errorf("system interpreter: %v", got)
	}
}

// Version is what --version printed, trimmed; a CLI that fails says so.
func TestVersion(t *testing.T) {
	dir := t.TempDir()
	cli := filepath.Join(dir, "cli")
	if err := os.WriteFile(cli, []byte("#!/bin/sh\necho '  codex-cli 0.169.0 '\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if v, err := agentproc.Version(cli, nil, 5e9); err != nil || v != "codex-cli 0.169.0" {
		t.Errorf("Version = %q %v", v, err)
	}
	if err := os.WriteFile(cli, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := agentproc.Version(cli, nil, 5e9); err == nil {
		t.Error("a failing --version passed")
	}
}

// A bare name is looked up on the PATH the CLI will run with, else this
// process's; a path is taken as it is; what is found is absolute.
func TestFindCLI(t *testing.T) {
	dir := t.TempDir()
	cli := filepath.Join(dir, "agent")
	if err := os.WriteFile(cli, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := agentproc.FindCLI("agent", []string{"PATH=/nowhere:" + dir}); err != nil || p != cli {
		t.Errorf("on env's PATH: %q %v", p, err)
	}
	if _, err := agentproc.FindCLI("agent", []string{"PATH=/nowhere"}); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("not on env's PATH: %v", err)
	}
	t.Setenv("PATH", dir)
	if p, err := agentproc.FindCLI("agent", nil); err != nil || p != cli {
		t.Errorf("on this process's PATH: %q %v", p, err)
	}
	if p, err := agentproc.FindCLI(cli, []string{"PATH=/nowhere"}); err != nil || p != cli {
		t.Errorf("a path: %q %v", p, err)
	}
	if _, err := agentproc.FindCLI(dir, nil); err == nil {
		t.Error("a directory was taken for the CLI")
	}
}

// A sandboxed CLI installed under /tmp (which the sandbox replaces with
// its own) is still there inside: its npm tree is bound read-only.
func TestSandboxedShowsTheCLI(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skipf("bubblewrap is not installed: %v", err)
	}
	root, err := os.MkdirTemp("/tmp", "agentproc-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	bin := filepath.Join(root, "node_modules", ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(bin, "agent")
	if err := os.WriteFile(cli, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ws, home := t.TempDir(), t.TempDir()
	cmd := &transport.Command{Path: cli, Args: []string{"serve"}, Env: []string{"A=1"}}
	if err := agentproc.Sandbox(cmd, sandbox.Policy{}, ws, home); err != nil {
		t.Fatal(err)
	}
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	joined, env := strings.Join(cmd.Args, " "), cmd.Env
	if !strings.Contains(joined, "--ro-bind "+filepath.Join(root, "node_modules")) || !strings.HasSuffix(joined, cli+" serve") ||
		!slices.Contains(env, "A=1") {
		t.Fatalf("args %s env %q", joined, env)
	}
}
