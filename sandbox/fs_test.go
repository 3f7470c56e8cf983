package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/sandbox"
)

func TestWorkspaceAndHomeWritable(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	r := sh(t, f.policy(), `set -e
echo hello > out.txt; cat out.txt; pwd
mkdir -p sub && echo deep > sub/f
echo state > "$HOME/.state"; echo "$HOME"
echo scratch > /tmp/scratch; cat /tmp/scratch`)
	want := "hello\n" + f.ws + "\n" + f.home + "\nscratch\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d\nstdout %q\nwant   %q\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
	for path, content := range map[string]string{
		filepath.Join(f.ws, "out.txt"):  "hello\n",
		filepath.Join(f.ws, "sub", "f"): "deep\n",
		filepath.Join(f.home, ".state"): "state\n",
	} {
		if b, err := os.ReadFile(path); err != nil || string(b) != content {
			t.Errorf("%s on the host: %q %v", path, b, err)
		}
	}
}

// Dir is where the agent starts; the whole workspace stays its to write.
func TestWorkingDirInsideWorkspace(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	p := f.policy()
	p.Dir = filepath.Join(f.ws, "src")
	if err := os.Mkdir(p.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := sh(t, p, `pwd; echo up > ../up.txt && cat ../up.txt`)
	if want := p.Dir + "\nup\n"; r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d\nstdout %q\nwant   %q\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
}

func TestWritesOutsideFail(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	targets := []string{
		"/etc/tether-sandbox-test",
		"/usr/tether-sandbox-test",
		"/root/tether-sandbox-test",
		"/var/tmp/tether-sandbox-test",
		filepath.Join(f.base, "escaped"),    // above the workspaces root
		filepath.Join(f.root, "escaped"),    // the workspace's parent (hidden)
		filepath.Join(f.other, "escaped"),   // another workspace (hidden)
		filepath.Join(f.data, "escaped"),    // runner data (hidden)
		filepath.Join(f.homes, "b", "evil"), // another home (hidden)
	}
	for _, target := range targets {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(target, f.base), "/", "_"), func(t *testing.T) {
			r := sh(t, f.policy(), "echo x > '"+target+"' && echo WROTE; mkdir '"+target+".d' && echo MADE; exit 0")
			if strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "MADE") {
				t.Fatalf("write to %s succeeded inside: %q", target, r.stdout)
			}
			// Read-only where the view shows a directory (/etc, /usr, the
			// root, hidden dirs); elsewhere the parent does not even
			// exist (/root, /var, other workspaces and homes).
			if !strings.Contains(r.stderr, "Read-only file system") && !strings.Contains(r.stderr, "nonexistent") {
				t.Fatalf("want a read-only or nonexistent error, got: %s", r.stderr)
			}
			if exists(target) || exists(target+".d") {
				t.Fatalf("%s appeared on the host", target)
			}
		})
	}
}

func TestOtherWorkspaceInvisible(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	script := "cat '" + filepath.Join(f.other, "secret.txt") + "'; ls -A '" + f.root + "'; ls -A '" + f.homes + "'"
	r := sh(t, f.policy(), script)
	if strings.Contains(r.stdout, "other workspace") || r.stdout != "a\na\n" {
		t.Fatalf("inside the sandbox: stdout %q stderr %s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "No such file or directory") {
		t.Fatalf("stderr %s", r.stderr)
	}
	// Hide wins over a broad read-only path an operator adds...
	p := f.policy()
	p.ReadOnly = []string{f.base}
	if r := sh(t, p, script); strings.Contains(r.stdout, "other workspace") || r.stdout != "a\na\n" {
		t.Fatalf("with %s read-only: stdout %q stderr %s", f.base, r.stdout, r.stderr)
	}
	// ...and without it that path does show the other workspace, so the
	// hiding is Hide's doing and not an accident of the fixture.
	p.Hide = nil
	if r := sh(t, p, script); !strings.Contains(r.stdout, "other workspace") {
		t.Fatalf("control run did not see the other workspace: %q %s", r.stdout, r.stderr)
	}
}

func TestRunnerDataInvisible(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	r := sh(t, f.policy(), "ls -A '"+f.data+"'; cat '"+filepath.Join(f.data, "runner.db")+"'; echo done")
	if r.stdout != "done\n" || strings.Contains(r.stdout, "runner data") {
		t.Fatalf("stdout %q stderr %s", r.stdout, r.stderr)
	}
}

func TestReadOnlyBindInsideHidden(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	tools := filepath.Join(f.data, "tools")
	if err := os.MkdirAll(tools, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tools, "tool.sh"), "echo tool ran\n")
	p := f.policy()
	p.ReadOnly = []string{tools}
	r := sh(t, p, "sh '"+filepath.Join(tools, "tool.sh")+"'; echo x > '"+filepath.Join(tools, "new")+"' || echo denied; cat '"+filepath.Join(f.data, "runner.db")+"' || echo hidden")
	if r.stdout != "tool ran\ndenied\nhidden\n" {
		t.Fatalf("stdout %q stderr %s", r.stdout, r.stderr)
	}
}

func TestPrivateTmp(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	host, err := os.CreateTemp("/tmp", "tether-host-visible-")
	if err != nil {
		t.Fatal(err)
	}
	_ = host.Close()
	defer os.Remove(host.Name())
	inside := "/tmp/tether-inside-" + filepath.Base(f.base)
	r := sh(t, f.policy(), "echo x > '"+inside+"' && echo wrote; test -e '"+host.Name()+"' && echo SEES_HOST; ls -A /tmp")
	if r.stdout != "wrote\n"+filepath.Base(inside)+"\n" {
		t.Fatalf("stdout %q stderr %s", r.stdout, r.stderr)
	}
	if exists(inside) {
		_ = os.Remove(inside)
		t.Fatal("a file written to /tmp inside appeared in the host's /tmp")
	}
}

// Other packages' tests keep workspaces under t.TempDir(), inside /tmp,
// which the sandbox replaces: the binds must come back on top of it.
func TestLayoutUnderTmp(t *testing.T) {
	requireBwrap(t)
	base := t.TempDir()
	root, homes := filepath.Join(base, "workspaces"), filepath.Join(base, "homes")
	ws, other, home := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(homes, "a")
	for _, d := range []string{ws, other, home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(other, "secret.txt"), "other workspace")
	p := sandbox.Policy{Workspace: ws, Home: home, Hide: []string{root, homes}}
	r := sh(t, p, "echo x > f && cat f; echo y > \"$HOME/g\" && cat \"$HOME/g\"; cat "+filepath.Join(other, "secret.txt")+" || echo hidden; touch "+filepath.Join(root, "z")+" || echo ro")
	if r.stdout != "x\ny\nhidden\nro\n" || !exists(filepath.Join(ws, "f")) || !exists(filepath.Join(home, "g")) {
		t.Fatalf("stdout %q stderr %s", r.stdout, r.stderr)
	}
}

// The agent may create user namespaces (BashCommand needs them), and is
// root in one it makes. The mounts it inherits there are locked: it can
// neither lift the tmpfs off a hidden directory nor make / writable.
func TestNestedNamespaceCannotUnhide(t *testing.T) {
	requireBwrap(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skipf("unshare (util-linux) not installed: %v", err)
	}
	f := newFixture(t)
	p := f.policy()
	p.NestedSandboxes = true // else the filter refuses unshare outright
	p.ReadOnly = []string{f.base}
	secret := filepath.Join(f.other, "secret.txt")
	script := `unshare -Urm sh -c '
id -u
umount ` + f.ws + ` 2>/dev/null
umount -l ` + f.root + ` 2>/dev/null
cat ` + secret + ` 2>/dev/null || echo hidden
mount -o remount,rw / 2>/dev/null || mount -o remount,rw,bind / 2>/dev/null || echo no-remount
touch /etc/tether-escape 2>/dev/null && echo WROTE || echo ro'
cat /proc/1/root` + secret + ` 2>/dev/null || echo hidden`
	r := sh(t, p, script)
	if r.stdout != "0\nhidden\nno-remount\nro\nhidden\n" || exists("/etc/tether-escape") {
		t.Fatalf("stdout %q stderr %s", r.stdout, r.stderr)
	}
}
