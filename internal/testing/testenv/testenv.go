// Package testenv owns what tests need to find and run the real agent CLIs
// offline: where the pinned CLI was installed, and the clean environment that
// keeps it talking only to a fake model server on loopback; and what tests
// share to watch what runs: the processes on the machine, a log buffer.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ClaudeCLIEnv names the variable that overrides where the real claude CLI is.
const ClaudeCLIEnv = "TETHER_CLAUDE_CLI"

// ModuleRoot walks up from the working directory to the folder holding go.mod.
func ModuleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// FindClaudeCLI returns the pinned real claude CLI: $TETHER_CLAUDE_CLI, or the
// copy scripts/test installs under .cache/npm. It never falls back to PATH, so
// tests only ever run the version the project pins.
func FindClaudeCLI() (string, bool) {
	if p := os.Getenv(ClaudeCLIEnv); p != "" {
		if _, err := exec.LookPath(p); err == nil {
			return p, true
		}
		return "", false
	}
	root, ok := ModuleRoot()
	if !ok {
		return "", false
	}
	p := filepath.Join(root, ".cache", "npm", "node_modules", ".bin", "claude")
	if _, err := os.Stat(p); err != nil {
		return "", false
	}
	return p, true
}

// RequireClaudeCLI returns the real CLI or skips the test with the reason.
// Tests that use it are named TestRealCLI* so scripts/test can count them.
func RequireClaudeCLI(t testing.TB) string {
	t.Helper()
	p, ok := FindClaudeCLI()
	if !ok {
		t.Skipf("real claude CLI not installed (run scripts/test or set %s)", ClaudeCLIEnv)
	}
	return p
}

// ClaudeEnv is the whole environment for a real claude CLI run against a fake
// Anthropic API at baseURL, with home as its HOME. Nothing is inherited but
// PATH, so no real key or config can leak in and no traffic leaves loopback.
func ClaudeEnv(home, baseURL string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_API_KEY=sk-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_MAX_RETRIES=1",
	}
}

// SharedDir is the project's shared reference folder (transcripts, seeds),
// which sits beside the repository.
func SharedDir(t testing.TB) string {
	t.Helper()
	root, ok := ModuleRoot()
	if !ok {
		t.Fatal("cannot find the module root")
	}
	dir := filepath.Join(filepath.Dir(root), "shared")
	if _, err := os.Stat(filepath.Join(dir, "transcripts")); err != nil {
		t.Skipf("shared reference folder not found beside the repository: %v", err)
	}
	return dir
}
