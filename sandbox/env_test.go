package sandbox_test

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestEnvironmentIsExactlyThePolicys(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	t.Setenv("SECRET_TOKEN", "hunter2")
	t.Setenv("ANTHROPIC_API_KEY", "sk-host-key")
	p := f.policy()
	p.Env = map[string]string{
		"ANTHROPIC_API_KEY": "sk-agent-key",
		"WEIRD":             "spaces and 'quotes' and\nnewline",
		"HOME":              "/somewhere/else", // the sandbox's HOME wins
		"LD_LIBRARY_PATH":   "/opt/lib",        // reaches the agent, not bwrap
	}
	// /proc/self/environ, not env(1) or a shell, which add their own.
	r := run(t, p, "/bin/cat", "/proc/self/environ")
	got := strings.Split(strings.TrimSuffix(r.stdout, "\x00"), "\x00")
	slices.Sort(got)
	want := []string{
		"ANTHROPIC_API_KEY=sk-agent-key",
		"HOME=" + f.home,
		"LD_LIBRARY_PATH=/opt/lib",
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"PWD=" + f.ws, // bwrap's --chdir sets it
		"TMPDIR=/tmp",
		"WEIRD=spaces and 'quotes' and\nnewline",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("environment inside:\n%q\nwant:\n%q\nstderr %s", got, want, r.stderr)
	}
	// Secrets travel in bwrap's environment, never on its command line.
	sc, err := p.Wrap("/bin/true", nil)
	if err != nil {
		t.Fatal(err)
	}
	sc.Close()
	argv, env := sc.Args, sc.Env
	if strings.Contains(strings.Join(argv, " "), "sk-agent-key") || !slices.Contains(env, "ANTHROPIC_API_KEY=sk-agent-key") {
		t.Fatalf("argv %q env %q", argv, env)
	}
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "LD_") }) {
		t.Fatalf("loader variable in bwrap's own environment: %q", env)
	}
	if os.Getenv("SECRET_TOKEN") == "" {
		t.Fatal("test setup: SECRET_TOKEN not set on the host")
	}
}

func TestEnvironmentPath(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	p := f.policy()
	p.Env = map[string]string{"PATH": "/bin:/usr/bin"}
	if r := sh(t, p, `echo "$PATH"`); r.stdout != "/bin:/usr/bin\n" {
		t.Fatalf("PATH %q", r.stdout)
	}
}
