package claude

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"
)

// MinimumCLIVersion is the oldest CLI this SDK is known to work with; older
// ones get a warning, not a refusal.
const MinimumCLIVersion = "2.0.0"

// FindCLI returns the claude executable: explicit if given (it must exist),
// else the first of PATH and the usual install places.
func FindCLI(explicit string) (string, error) {
	if explicit != "" {
		p, err := exec.LookPath(explicit)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %w", ErrCLINotFound, explicit, err)
		}
		return p, nil
	}
	searched := []string{"$PATH"}
	if p, err := exec.LookPath("claude"); err == nil {
		return p, nil
	}
	for _, p := range usualPlaces() {
		searched = append(searched, p)
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", &CLINotFoundError{Searched: searched}
}

func usualPlaces() []string {
	home, err := os.UserHomeDir()
	places := []string{"/usr/local/bin/claude"}
	if err != nil {
		return places
	}
	return append(places,
		filepath.Join(home, ".npm-global", "bin", "claude"),
		filepath.Join(home, ".local", "bin", "claude"),
		filepath.Join(home, "node_modules", ".bin", "claude"),
		filepath.Join(home, ".yarn", "bin", "claude"),
		filepath.Join(home, ".claude", "local", "claude"),
	)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

var versionPattern = regexp.MustCompile(`\d+\.\d+\.\d+`)

// CLIVersion runs `claude -v` (bounded by ctx and at most 2 s) and returns
// the version number.
func CLIVersion(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-v").Output()
	if err != nil {
		return "", fmt.Errorf("claude: %s -v: %w", path, err)
	}
	v := versionPattern.Find(out)
	if v == nil {
		return "", errors.New("claude: no version in: " + string(out))
	}
	return string(v), nil
}

// VersionAtLeast compares dotted versions numerically.
func VersionAtLeast(v, min string) bool {
	var a, b [3]int
	fmt.Sscanf(v, "%d.%d.%d", &a[0], &a[1], &a[2])
	fmt.Sscanf(min, "%d.%d.%d", &b[0], &b[1], &b[2])
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}
