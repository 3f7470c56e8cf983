package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/testenv"
)

// tckVerdict is the last line of the ACP TCK's run.sh.
var tckVerdict = regexp.MustCompile(`ACP TCK: (\d+)/(\d+) MANDATORY pass, (\d+)/(\d+) CAPABILITY pass, verdict (\S+)`)

// tckFinding is a requirement's line in the TCK's summary that failed,
// or an advisory one's.
var tckFinding = regexp.MustCompile(`^\s+ACP-\S+\s+FAIL|^\s+ADVISORY\s+PASS`)

// tckPython is an interpreter that runs the vendored TCK (pytest and
// jsonschema), or "" with the reason there is none.
func tckPython() (string, string) {
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		if exec.Command(c, "-c", "import pytest, jsonschema").Run() == nil {
			return c, ""
		}
	}
	return "", "no python3 imports pytest and jsonschema (apt-get install python3-pytest python3-jsonschema)"
}

// runTCK runs the whole ACP TCK against `tether acp` with args, and
// fails unless it is CONFORMANT. It logs the verdict line.
func runTCK(t *testing.T, env []string, args []string) {
	t.Helper()
	py, why := tckPython()
	if py == "" {
		t.Skip(why)
	}
	root, ok := testenv.ModuleRoot()
	if !ok {
		t.Fatal("no module root")
	}
	report := filepath.Join(t.TempDir(), "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "third_party", "acp-tck", "run.sh"), append([]string{tetherPath(), "acp"}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(env, "ACPTCK_PYTHON="+py, "ACPTCK_REPORT="+report, "TMPDIR="+t.TempDir(),
		"ACPTCK_ARGS=--timeout 30 --cancel-prompt SLOW")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	m := tckVerdict.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("the TCK printed no verdict (%v):\n%s", err, out)
	}
	t.Logf("%s (%.1fs)", m[0], time.Since(start).Seconds())
	for _, line := range strings.Split(string(out), "\n") {
		if tckFinding.MatchString(line) {
			t.Logf("finding: %s", strings.TrimSpace(line))
		}
	}
	if m[5] != "CONFORMANT" || m[1] != m[2] || m[3] != m[4] || err != nil {
		t.Fatalf("not conformant (%v); report %s:\n%s", err, report, lastLines(string(out), 60))
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func TestACPConformanceMockLocal(t *testing.T) {
	runTCK(t, acpEnv(), []string{"--agent", "mock", "--data-dir", filepath.Join(t.TempDir(), "acp")})
}

func TestACPConformanceMockRunner(t *testing.T) {
	p := startServe(t, cleanEnv(), "--sandbox", "on")
	runTCK(t, acpEnv("TETHER_AUTH_TOKEN="+testToken), []string{"--agent", "mock", "--runner", "http://" + p.addr})
}
