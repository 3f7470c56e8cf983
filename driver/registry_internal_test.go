package driver

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
)

func testKind(name string, order int) Kind {
	return Kind{Name: name, Title: name, About: "a " + name, Order: order,
		New: func(Config) (agent.Driver, error) { return nil, errors.New("not in a test") }}
}

// The registry lists its kinds in the default order (by Order, then
// name) and finds a kind by its name, or on Mast's wire by its Mast name
// too.
func TestRegistryOrderAndLookup(t *testing.T) {
	var r registry
	for _, k := range []Kind{testKind("zeta", 10), testKind("beta", 30), testKind("alpha", 30)} {
		if err := r.add(k); err != nil {
			t.Fatal(err)
		}
	}
	withMast := testKind("gamma", 20)
	withMast.MastType = "gamma-code"
	if err := r.add(withMast); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range r.all() {
		names = append(names, k.Name)
	}
	if want := []string{"zeta", "gamma", "alpha", "beta"}; !slices.Equal(names, want) {
		t.Fatalf("order %v, want %v", names, want)
	}
	if k, ok := r.lookupMast("gamma-code"); !ok || k.Name != "gamma" {
		t.Errorf("Mast name: %v %v", k.Name, ok)
	}
	if k, ok := r.lookupMast("gamma"); !ok || k.Name != "gamma" {
		t.Errorf("own name on Mast's wire: %v %v", k.Name, ok)
	}
	if _, ok := r.lookup("gamma-code"); ok {
		t.Error("a Mast name found as a kind's own")
	}
	if k, _ := r.lookup("zeta"); k.MastName() != "zeta" {
		t.Errorf("a kind without a Mast name is %q there", k.MastName())
	}
}

// A kind whose name or Mast name is taken, or that lacks what every
// part of tether needs of it, is refused with the reason, and the
// registry keeps what it had.
func TestRegistryRefuses(t *testing.T) {
	var r registry
	claude := testKind("claude", 20)
	claude.MastType = "claude-code"
	if err := r.add(claude); err != nil {
		t.Fatal(err)
	}
	mutate := func(name string, change func(*Kind)) Kind {
		k := testKind(name, 1)
		if change != nil {
			change(&k)
		}
		return k
	}
	for why, k := range map[string]Kind{
		"name taken":                  mutate("claude", nil),
		"name is another's Mast name": mutate("claude-code", nil),
		"Mast name is another's name": mutate("other", func(k *Kind) { k.MastType = "claude" }),
		"Mast name taken":             mutate("other", func(k *Kind) { k.MastType = "claude-code" }),
		"empty name":                  mutate("", nil),
		"name with =":                 mutate("a=b", nil),
		"name with /":                 mutate("a/b", nil),
		"upper case":                  mutate("Codex", nil),
		"no constructor":              mutate("other", func(k *Kind) { k.New = nil }),
		"no help":                     mutate("other", func(k *Kind) { k.About = "" }),
		"built in, with a version":    mutate("other", func(k *Kind) { k.TestedVersion = "1.0" }),
	} {
		err := r.add(k)
		var re *RegistrationError
		if !errors.Is(err, ErrRegistration) || !errors.As(err, &re) || re.Reason == "" {
			t.Errorf("%s: %v", why, err)
		}
	}
	if len(r.all()) != 1 {
		t.Fatalf("a refused kind was kept: %d kinds", len(r.all()))
	}
}

// Each kind's environment: its prefixes, the locale and PATH, and the
// names the operator adds; nothing else of the runner's.
func TestKindEnviron(t *testing.T) {
	k := testKind("x", 1)
	k.EnvPrefixes = []string{"X_"}
	env := k.Environ([]string{"PATH=/bin", "X_KEY=1", "Y_KEY=2", "LANG=C", "TETHER_AUTH_TOKEN=t", "EXTRA=e", "EQ=a=b"}, []string{"EXTRA", "EQ"})
	var got []string
	for name, v := range env {
		got = append(got, name+"="+v)
	}
	slices.Sort(got)
	if want := "EQ=a=b EXTRA=e LANG=C PATH=/bin X_KEY=1"; strings.Join(got, " ") != want {
		t.Fatalf("env %v, want %s", got, want)
	}
}

// The version check holds a CLI to the tested version, or with
// AllowUntestedVersion lets it run.
func TestCheckVersion(t *testing.T) {
	err := Config{}.CheckVersion("x", "2.0", "1.0")
	var ve *VersionError
	if !errors.As(err, &ve) || !errors.Is(err, ErrUntestedVersion) || ve.Kind != "x" || ve.Found != "2.0" || ve.Tested != "1.0" {
		t.Fatalf("untested: %v", err)
	}
	if err := (Config{AllowUntestedVersion: true}).CheckVersion("x", "2.0", "1.0"); err != nil {
		t.Fatalf("allowed: %v", err)
	}
	if err := (Config{}).CheckVersion("x", "1.0", "1.0"); err != nil {
		t.Fatalf("tested: %v", err)
	}
}

// A kind's CLI is found on the PATH of the environment it will run
// with; one that is not there is an error matching ErrCLINotFound, and a
// built-in kind has none to find.
func TestFind(t *testing.T) {
	k := testKind("sh-agent", 1)
	k.CLI = "sh"
	if p, err := k.Find("", []string{"PATH=/bin:/usr/bin"}); err != nil || !strings.HasSuffix(p, "/sh") {
		t.Fatalf("sh: %q %v", p, err)
	}
	k.CLI = "no-such-agent-cli"
	_, err := k.Find("", []string{"PATH=/bin"})
	var nf *CLINotFoundError
	if !errors.Is(err, ErrCLINotFound) || !errors.As(err, &nf) || nf.Kind != "sh-agent" || nf.CLI != "no-such-agent-cli" {
		t.Fatalf("missing: %v", err)
	}
	if p, err := testKind("builtin", 1).Find("", nil); p != "" || err != nil {
		t.Fatalf("built in: %q %v", p, err)
	}
}
