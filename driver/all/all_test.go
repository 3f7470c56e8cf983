package all

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/driver"
)

// The kinds a program importing this package offers are the ones the
// README's agents table lists, in its order (the default order), with
// their Mast names and CLIs.
func TestKindsAreTheDocumentedOnes(t *testing.T) {
	rows := agentsTable(t)
	kinds := driver.Kinds()
	var documented []string
	for _, r := range rows {
		documented = append(documented, r[0])
	}
	if !slices.Equal(documented, driver.Names()) {
		t.Fatalf("registered in the default order: %v; the README lists %v", driver.Names(), documented)
	}
	tick := regexp.MustCompile("`([^`]*)`")
	for i, k := range kinds {
		row := rows[i]
		if m := tick.FindStringSubmatch(row[3]); m == nil || m[1] != k.MastName() {
			t.Errorf("%s: Mast agentType %q, the README says %q", k.Name, k.MastName(), row[3])
		}
		cli := row[2]
		switch {
		case k.Builtin() && !strings.HasPrefix(cli, "none"):
			t.Errorf("%s is built in; the README gives it a CLI: %q", k.Name, cli)
		case !k.Builtin() && !strings.HasPrefix(cli, "`"+k.CLI+"`"):
			t.Errorf("%s: CLI %s, the README says %q", k.Name, k.CLI, cli)
		case k.TestedVersion != "" && !strings.Contains(cli, "tested with "+k.TestedVersion):
			t.Errorf("%s: tested with %s, the README says %q", k.Name, k.TestedVersion, cli)
		}
	}
}

// agentsTable is the README's table of agent kinds: its rows' cells.
func agentsTable(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	in := false
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "| kind | agent | CLI |"):
			in = true
		case !in || strings.HasPrefix(line, "| ---"):
		case !strings.HasPrefix(line, "|"):
			return rows
		default:
			var cells []string
			for c := range strings.SplitSeq(strings.Trim(line, "|"), "|") {
				cells = append(cells, strings.TrimSpace(c))
			}
			if len(cells) != 4 {
				t.Fatalf("agents table row %q", line)
			}
			cells[0] = strings.Trim(cells[0], "`")
			rows = append(rows, cells)
		}
	}
	if len(rows) == 0 {
		t.Fatal("no agents table in the README")
	}
	return rows
}

// Every kind carries what the parts of tether need of it, and its names
// are its own: none is another kind's name on any wire.
func TestKindsAreComplete(t *testing.T) {
	seen := map[string]string{}
	for _, k := range driver.Kinds() {
		for _, name := range []string{k.Name, k.MastName()} {
			if other, ok := seen[name]; ok && other != k.Name {
				t.Errorf("%q names both %s and %s", name, other, k.Name)
			}
			seen[name] = k.Name
		}
		if !slices.Contains([]string{"claude", "gemini", "mock", "openai"}, k.CheckpointSDK) {
			t.Errorf("%s: checkpoint tag %q is none of the shim's union", k.Name, k.CheckpointSDK)
		}
		if got, ok := driver.LookupMast(k.MastName()); !ok || got.Name != k.Name {
			t.Errorf("%s: its Mast name %s finds %q", k.Name, k.MastName(), got.Name)
		}
	}
	if k, ok := driver.Lookup("mock"); !ok || !k.Builtin() {
		t.Fatal("the mock is not registered as built in: a runner would have no agent to fall back on")
	}
}

// A second registration of a kind's name is refused at once: two driver
// packages cannot both be one agent.
func TestRegisterRefusesATakenName(t *testing.T) {
	codex, _ := driver.Lookup("codex")
	before := len(driver.Kinds())
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, driver.ErrRegistration) {
			t.Fatalf("registered codex twice: %v", err)
		}
		if len(driver.Kinds()) != before {
			t.Fatalf("%d kinds after a refused registration", len(driver.Kinds()))
		}
	}()
	driver.Register(codex)
}
