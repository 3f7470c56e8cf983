package runview

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/tetherhq/tether/claude"
)

// Version prints tether's version and, when it can be found, the claude
// CLI's (cliPath, or the one on PATH and in the usual places).
func Version(ctx context.Context, w io.Writer, cliPath string) {
	fmt.Fprintf(w, "tether %s (%s)\n", tetherVersion(), runtime.Version())
	path, err := claude.FindCLI(cliPath)
	if err != nil {
		fmt.Fprintln(w, "claude: not found (tether run --mock works without it)")
		return
	}
	v, err := claude.CLIVersion(ctx, path)
	if err != nil {
		fmt.Fprintf(w, "claude: %s (version unknown: %v)\n", path, err)
		return
	}
	note := ""
	if !claude.VersionAtLeast(v, claude.MinimumCLIVersion) {
		note = fmt.Sprintf(" (older than %s, which tether needs)", claude.MinimumCLIVersion)
	}
	fmt.Fprintf(w, "claude %s at %s%s\n", v, path, note)
}

// tetherVersion is the module version this binary was built from.
func tetherVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
