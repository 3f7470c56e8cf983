package fakegemini

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testing/testenv"
)

// CLIEnv names a Gemini CLI to use instead of the pinned copy.
const CLIEnv = "TETHER_GEMINI_CLI"

// FindCLI returns the pinned real gemini CLI: $TETHER_GEMINI_CLI, or the
// copy scripts/install-agents puts under .cache/npm. It never falls back to
// PATH.
func FindCLI() (string, bool) {
	if p := os.Getenv(CLIEnv); p != "" {
		if _, err := exec.LookPath(p); err == nil {
			return p, true
		}
		return "", false
	}
	root, ok := testenv.ModuleRoot()
	if !ok {
		return "", false
	}
	p := filepath.Join(root, ".cache", "npm", "node_modules", ".bin", "gemini")
	if _, err := os.Stat(p); err != nil {
		return "", false
	}
	return p, true
}

// RequireCLI returns the real gemini CLI or skips the test with the
// reason. Tests that use it are named TestRealCLI*.
func RequireCLI(t testing.TB) string {
	t.Helper()
	p, ok := FindCLI()
	if !ok {
		t.Skipf("real gemini CLI not installed (run scripts/install-agents or set %s)", CLIEnv)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("gemini CLI needs node, which is not on PATH")
	}
	return p
}

// Env is a clean environment that points Gemini CLI at the fake server at
// baseURL, with home as its HOME.
func Env(home, baseURL string) []string {
	return []string{
		"PATH=" + cleanPath(),
		"HOME=" + home,
		"GEMINI_API_KEY=fake-gemini-key",
		"GOOGLE_GEMINI_BASE_URL=" + baseURL,
	}
}

// cleanPath is the system directories, and first the directory of the
// node on the test's PATH (the gemini CLI is a node script).
func cleanPath() string {
	const system = "/usr/local/bin:/usr/bin:/bin"
	node, err := exec.LookPath("node")
	if err != nil {
		return system
	}
	dir, err := filepath.Abs(filepath.Dir(node))
	if err != nil || strings.Contains(":"+system+":", ":"+dir+":") {
		return system
	}
	return dir + ":" + system
}
