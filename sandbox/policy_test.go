package sandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/sandbox"
)

func TestWrapArgv(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	p := f.policy()
	p.Network = true
	p.ReadOnly = []string{f.data + "/../data"} // cleaned and resolved
	sc, err := p.Wrap("/usr/bin/agent", []string{"--flag", "x y"})
	if err != nil {
		t.Fatal(err)
	}
	sc.Close()
	argv := sc.Args
	if !filepath.IsAbs(sc.Path) || filepath.Base(sc.Path) != "bwrap" {
		t.Fatalf("bwrap %q", sc.Path)
	}
	prefix := []string{
		"--die-with-parent", "--new-session",
		"--unshare-user", "--uid", "1000", "--gid", "1000",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--cap-drop", "ALL",
	}
	// The policy's own mounts, after the system view: shallowest first,
	// hidden directories read-only, then the seccomp filter (the 3rd
	// descriptor: passwd and group come first) and a read-only root.
	own := []string{
		"--tmpfs", f.root, "--tmpfs", f.homes, "--tmpfs", f.data, "--ro-bind", f.data, f.data,
		"--bind", f.ws, f.ws, "--bind", f.home, f.home,
		"--remount-ro", f.root, "--remount-ro", f.homes,
		"--seccomp", "5", "--remount-ro", "/",
		"--chdir", f.ws,
		"--", "/usr/bin/agent", "--flag", "x y",
	}
	if !slices.Equal(argv[:len(prefix)], prefix) || !slices.Equal(argv[len(argv)-len(own):], own) {
		t.Fatalf("argv\n%q\nwant it to start\n%q\nand end\n%q", argv, prefix, own)
	}
	view := strings.Join(argv[len(prefix):len(argv)-len(own)], " ")
	for _, want := range []string{"--dev /dev", "--proc /proc", "--tmpfs /tmp", "--ro-bind-data 3 /etc/passwd", "--ro-bind-data 4 /etc/group"} {
		if !strings.Contains(view, want) {
			t.Errorf("system view lacks %q: %s", want, view)
		}
	}
	for _, never := range []string{"--ro-bind / /", "/root", "/home", "/var", "/etc/shadow"} {
		if strings.Contains(view, never) {
			t.Errorf("system view holds %q: %s", never, view)
		}
	}
	if len(sc.Files) != 3 {
		t.Errorf("%d files, want passwd, group and the filter", len(sc.Files))
	}
	if sc.Env == nil {
		t.Fatal("env is nil: exec would inherit the runner's environment")
	}
	p.Network = false
	sc, _ = p.Wrap("/usr/bin/agent", nil)
	sc.Close()
	if !slices.Contains(sc.Args, "--unshare-net") {
		t.Fatalf("no --unshare-net without Network: %q", sc.Args)
	}
	// A nested sandbox's filter travels as one more file.
	p.NestedSandboxes = true
	sc, _ = p.Wrap("/usr/bin/agent", nil)
	sc.Close()
	if len(sc.Files) != 4 || !strings.Contains(strings.Join(sc.Args, " "), "--ro-bind-data 5 "+sandbox.InternalDir+"/tools.seccomp --seccomp 6") {
		t.Fatalf("nested: %d files, argv %q", len(sc.Files), sc.Args)
	}
}

func TestWrapRejects(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	file := filepath.Join(f.data, "runner.db")
	hiddenExe := filepath.Join(f.data, "agent")
	writeFile(t, hiddenExe, "#!/bin/sh\n")
	cases := map[string]func(p *sandbox.Policy) (string, error){
		"empty workspace":    func(p *sandbox.Policy) (string, error) { p.Workspace = ""; return "/bin/true", nil },
		"relative workspace": func(p *sandbox.Policy) (string, error) { p.Workspace = "ws"; return "/bin/true", nil },
		"root workspace":     func(p *sandbox.Policy) (string, error) { p.Workspace = "/"; return "/bin/true", nil },
		"missing home":       func(p *sandbox.Policy) (string, error) { p.Home = f.base + "/nope"; return "/bin/true", nil },
		"file as workspace":  func(p *sandbox.Policy) (string, error) { p.Workspace = file; return "/bin/true", nil },
		"missing hide": func(p *sandbox.Policy) (string, error) {
			p.Hide = append(p.Hide, f.base+"/nope")
			return "/bin/true", nil
		},
		"hide root":         func(p *sandbox.Policy) (string, error) { p.Hide = append(p.Hide, "/"); return "/bin/true", nil },
		"relative readonly": func(p *sandbox.Policy) (string, error) { p.ReadOnly = []string{"x"}; return "/bin/true", nil },
		"env key with =": func(p *sandbox.Policy) (string, error) {
			p.Env = map[string]string{"A=B": "c"}
			return "/bin/true", nil
		},
		"env value with NUL": func(p *sandbox.Policy) (string, error) {
			p.Env = map[string]string{"A": "b\x00c"}
			return "/bin/true", nil
		},
		"hidden executable": func(p *sandbox.Policy) (string, error) { return hiddenExe, nil },
		"exe in tmp":        func(p *sandbox.Policy) (string, error) { return "/tmp/agent", nil },
		"exe outside the view": func(p *sandbox.Policy) (string, error) {
			exe := filepath.Join(f.base, "agent")
			writeFile(t, exe, "#!/bin/sh\n")
			return exe, nil
		},
		"missing readonly": func(p *sandbox.Policy) (string, error) {
			p.ReadOnly = []string{f.base + "/nope"}
			return "/bin/true", nil
		},
		"relative exe": func(p *sandbox.Policy) (string, error) { return "bin/agent", nil },
		"dir outside workspace": func(p *sandbox.Policy) (string, error) {
			p.Dir = f.home
			return "/bin/true", nil
		},
		"missing dir": func(p *sandbox.Policy) (string, error) { p.Dir = f.ws + "/nope"; return "/bin/true", nil },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			p := f.policy()
			path, _ := mutate(&p)
			_, err := p.Wrap(path, nil)
			var pe *sandbox.PolicyError
			if !errors.Is(err, sandbox.ErrInvalidPolicy) || !errors.As(err, &pe) {
				t.Fatalf("Wrap = %v", err)
			}
		})
	}
	// A hidden executable bound back read-only is fine.
	p := f.policy()
	p.ReadOnly = []string{f.data}
	if _, err := p.Wrap(hiddenExe, nil); err != nil {
		t.Fatal(err)
	}
	// Symlinks are followed: a link outside to a hidden target is refused.
	link := filepath.Join(f.base, "link-to-agent")
	if err := os.Symlink(hiddenExe, link); err != nil {
		t.Fatal(err)
	}
	if _, err := f.policy().Wrap(link, nil); !errors.Is(err, sandbox.ErrInvalidPolicy) {
		t.Fatalf("symlink to a hidden executable: %v", err)
	}
}

func TestAvailable(t *testing.T) {
	requireBwrap(t)
	if err := sandbox.Available(); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"missing": "/nonexistent/bwrap", "not bwrap": "/bin/false"} {
		err := sandbox.Policy{BwrapPath: path}.Available()
		var ue *sandbox.UnavailableError
		if !errors.Is(err, sandbox.ErrUnavailable) || !errors.As(err, &ue) {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := (sandbox.Policy{BwrapPath: path}).Wrap("/bin/true", nil); name == "missing" && !errors.Is(err, sandbox.ErrUnavailable) {
			t.Errorf("Wrap with %s bwrap: %v", name, err)
		}
	}
}

func TestUIDInside(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	p := f.policy()
	p.UID, p.GID = 4242, 4343
	// The runner's files (the workspace) belong to the agent inside, and
	// it has no capabilities at all.
	r := sh(t, p, "id -u; id -g; stat -c %u .; grep -E 'Cap(Eff|Prm|Bnd)' /proc/self/status | cut -f2 | sort -u")
	if r.stdout != "4242\n4343\n4242\n0000000000000000\n" {
		t.Fatalf("stdout %q stderr %s", r.stdout, r.stderr)
	}
}

// The probe at start mounts the policy's own paths: one that cannot be
// mounted fails it, and the error names it.
func TestAvailableChecksPolicyPaths(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	p := f.policy()
	p.ReadOnly = []string{f.base + "/toolchain"}
	err := p.Available()
	var pe *sandbox.PolicyError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), f.base+"/toolchain") {
		t.Fatalf("Available with a missing read-only path: %v", err)
	}
	if err := os.Mkdir(f.base+"/toolchain", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Available(); err != nil {
		t.Fatal(err)
	}
}

// Inside, the agent is a user of the sandbox's own passwd, whose home is
// its home; the host's users are not there.
func TestOwnPasswd(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	r := sh(t, f.policy(), "id -un; getent passwd agent | cut -d: -f6; cut -d: -f1 /etc/passwd | tr '\\n' ' '; cut -d: -f1 /etc/group | tr '\\n' ' '")
	if want := "agent\n" + f.home + "\nroot agent nobody root agent nogroup "; r.stdout != want {
		t.Fatalf("stdout %q, want %q; stderr %s", r.stdout, want, r.stderr)
	}
}
