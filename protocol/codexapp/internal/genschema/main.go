// Command genschema regenerates the checked-in JSON schema of codex
// app-server from the pinned codex CLI: `codex app-server
// generate-json-schema --out DIR` into the schema directory, and the
// experimental bundle (--experimental) into its experimental/ directory.
// The old schema is replaced only once both runs succeeded.
//
//	go run ./internal/genschema -schema schema [-codex path/to/codex]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tetherhq/tether/internal/testing/testenv"
)

// pinned is the version the checked-in schema must come from.
const pinned = "codex-cli 0.169.0"

// bundle is the file of the experimental run that is kept: the one-file
// bundle; its per-type files duplicate the stable ones.
const bundle = "codex_app_server_protocol.schemas.json"

func main() {
	schemaDir := flag.String("schema", "schema", "directory to write the schema into")
	codex := flag.String("codex", "", "codex executable (default: the pinned copy the tests use)")
	flag.Parse()
	if err := run(*schemaDir, *codex); err != nil {
		fmt.Fprintln(os.Stderr, "genschema:", err)
		os.Exit(1)
	}
}

func run(schemaDir, codex string) error {
	if codex == "" {
		p, ok := testenv.FindCodexCLI()
		if !ok {
			return fmt.Errorf("codex CLI not found (set %s)", testenv.CodexCLIEnv)
		}
		codex = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, codex, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", codex, err)
	}
	if v := strings.TrimSpace(string(out)); v != pinned {
		return fmt.Errorf("%s is %q, the schema is pinned to %q", codex, v, pinned)
	}
	parent := filepath.Dir(filepath.Clean(schemaDir))
	tmp, err := os.MkdirTemp(parent, ".genschema-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	stable, experimental := filepath.Join(tmp, "schema"), filepath.Join(tmp, "experimental")
	if err := generate(ctx, codex, stable); err != nil {
		return err
	}
	if err := generate(ctx, codex, experimental, "--experimental"); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(stable, "experimental"), 0o755); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(experimental, bundle), filepath.Join(stable, "experimental", bundle)); err != nil {
		return fmt.Errorf("experimental bundle: %w", err)
	}
	if err := os.RemoveAll(schemaDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.Rename(stable, schemaDir)
}

func generate(ctx context.Context, codex, dir string, extra ...string) error {
	args := append([]string{"app-server", "generate-json-schema", "--out", dir}, extra...)
	cmd := exec.CommandContext(ctx, codex, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("codex %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
