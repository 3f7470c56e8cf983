// Command sandboxbench measures what the sandbox's minimal view of the
// machine costs a session's start, against the whole root read-only
// (`--ro-bind / /`, the view the sandbox had before): the time from
// starting the sandboxed real Claude Code CLI to its answer to initialize,
// when a session is ready, and the bare start of /bin/true under each.
// Runs of the two views alternate, so that drift on a shared machine hits
// both alike. It prints medians and 90th percentiles; see
// docs/benchmarks.md.
//
//	go run ./bench/sandboxbench [-n 30]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/sandbox"
	"github.com/tetherhq/tether/transport"
)

func main() {
	n := flag.Int("n", 30, "starts of each view and program")
	flag.Parse()
	if err := run(*n); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxbench:", err)
		os.Exit(1)
	}
}

// layout is a runner's directories for one session, under /var/tmp (the
// sandbox has a /tmp of its own).
type layout struct{ base, root, ws, home, data string }

func newLayout() (*layout, error) {
	base, err := os.MkdirTemp("/var/tmp", "tether-sandboxbench-")
	if err != nil {
		return nil, err
	}
	l := &layout{base: base, root: filepath.Join(base, "workspaces"), data: filepath.Join(base, "data")}
	l.ws, l.home = filepath.Join(l.root, "a"), filepath.Join(l.data, "homes", "a")
	for _, d := range []string{l.ws, l.home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func run(n int) error {
	if err := sandbox.Available(); err != nil {
		return err
	}
	l, err := newLayout()
	if err != nil {
		return err
	}
	defer os.RemoveAll(l.base)
	cli, ok := testenv.FindClaudeCLI()
	if !ok {
		return errors.New("no claude CLI: run scripts/install-agents")
	}
	fake, err := fakeanthropic.Start(fakeanthropic.Options{})
	if err != nil {
		return err
	}
	defer fake.Close()
	truePath, err := exec.LookPath("true")
	if err != nil {
		return err
	}
	env := map[string]string{}
	for _, kv := range testenv.ClaudeEnv(l.home, fake.URL()) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	policy := sandbox.Policy{Workspace: l.ws, Home: l.home, Hide: []string{l.root, l.data}, Env: env, Network: true,
		ReadOnly: []string{npmTree(cli)}}
	fmt.Printf("sandbox start: minimal view against --ro-bind / /, %d starts each, alternating\n\n", n)
	fmt.Printf("%-28s %12s %12s %12s %12s\n", "program", "minimal p50", "host p50", "minimal p90", "host p90")
	for _, prog := range []struct {
		name  string
		start func(view string) (time.Duration, error)
	}{
		{"/bin/true", func(view string) (time.Duration, error) { return startTrue(policy, view, truePath) }},
		{"claude, start to ready", func(view string) (time.Duration, error) { return startClaude(policy, view, cli, l.ws, env) }},
	} {
		times := map[string][]time.Duration{}
		for i := 0; i < n; i++ {
			for _, view := range []string{"minimal", "host"} {
				d, err := prog.start(view)
				if err != nil {
					return fmt.Errorf("%s, %s view: %w", prog.name, view, err)
				}
				times[view] = append(times[view], d)
			}
		}
		m, h := times["minimal"], times["host"]
		fmt.Printf("%-28s %12s %12s %12s %12s   (minimal − host at p50: %s)\n", prog.name,
			pct(m, 50), pct(h, 50), pct(m, 90), pct(h, 90), pct(m, 50)-pct(h, 50))
	}
	return nil
}

// command is the policy's command for path, in the given view: "minimal"
// as Wrap makes it, "host" with the system view and seccomp filter
// replaced by the whole root read-only.
func command(p sandbox.Policy, view, path string, args []string) (*sandbox.Command, error) {
	sc, err := p.Wrap(path, args)
	if err != nil || view == "minimal" {
		return sc, err
	}
	sc.Close()
	sc.Files = nil
	sc.Args = hostRootArgs(sc.Args)
	return sc, nil
}

// hostRootArgs turns a minimal view's bwrap arguments into the host-root
// ones: the namespaces as they are, then --ro-bind / / with /dev, /proc
// and /tmp of its own, then the policy's own mounts from the first
// --tmpfs after /tmp on; no /etc of its own, no seccomp, no read-only root.
func hostRootArgs(a []string) []string {
	out := []string{}
	i := slices.Index(a, "--cap-drop") + 2
	out = append(out, a[:i]...)
	out = append(out, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
	own := slices.Index(a, "--perms") // the system view ends with passwd and group
	for own < len(a) && a[own] != "/etc/group" {
		own++
	}
	for j := own + 1; j < len(a); j++ {
		switch a[j] {
		case "--seccomp":
			j++
		case "--remount-ro":
			if a[j+1] == "/" {
				j++
				continue
			}
			out = append(out, a[j])
		default:
			out = append(out, a[j])
		}
	}
	return out
}

func startTrue(p sandbox.Policy, view, truePath string) (time.Duration, error) {
	sc, err := command(p, view, truePath, nil)
	if err != nil {
		return 0, err
	}
	defer sc.Close()
	cmd := exec.Command(sc.Path, sc.Args...)
	cmd.Env, cmd.ExtraFiles = sc.Env, sc.Files
	began := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%w: %s", err, out)
	}
	return time.Since(began), nil
}

func startClaude(p sandbox.Policy, view, cli, ws string, env map[string]string) (time.Duration, error) {
	opts := claude.Options{Cwd: ws, Env: env, ReplaceEnv: true, Model: "claude-sonnet-4-5", InitializeTimeout: 60 * time.Second}
	args, err := opts.CommandArgs()
	if err != nil {
		return 0, err
	}
	p.Env = map[string]string{}
	for _, kv := range opts.CommandEnv() {
		k, v, _ := strings.Cut(kv, "=")
		p.Env[k] = v
	}
	sc, err := command(p, view, cli, args)
	if err != nil {
		return 0, err
	}
	opts.Transport = &transport.Command{Path: sc.Path, Args: sc.Args, Env: sc.Env, ExtraFiles: sc.Files, Dir: ws}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	began := time.Now()
	c, err := claude.Connect(ctx, opts)
	if err != nil {
		return 0, err
	}
	d := time.Since(began)
	return d, c.Close()
}

// npmTree is the node_modules directory the CLI comes from.
func npmTree(cli string) string {
	real, err := filepath.EvalSymlinks(cli)
	if err != nil {
		real = cli
	}
	for d := filepath.Dir(real); d != "/"; d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			return d
		}
	}
	return filepath.Dir(real)
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100].Round(100 * time.Microsecond)
}
