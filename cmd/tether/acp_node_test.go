package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/testenv"
)

// runNodeClient runs the ACP client on the official TypeScript SDK
// (internal/testing/acpnode) against tether acp with args.
func runNodeClient(t *testing.T, env []string, args ...string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	root, ok := testenv.ModuleRoot()
	if !ok {
		t.Fatal("no module root")
	}
	sdk := filepath.Join(root, ".cache", "npm", "node_modules", "@agentclientprotocol", "sdk")
	if _, err := os.Stat(filepath.Join(sdk, "package.json")); err != nil {
		t.Skip("the ACP TypeScript SDK is not installed (scripts/install-agents)")
	}
	cwd := filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := filepath.Join(root, "internal", "testing", "acpnode", "client.mjs")
	cmd := exec.CommandContext(ctx, node, append([]string{script, sdk, cwd, "--", tetherPath(), "acp"}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the TypeScript SDK client: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func TestACPNodeClientMockLocal(t *testing.T) {
	runNodeClient(t, acpEnv(), "--agent", "mock", "--data-dir", filepath.Join(t.TempDir(), "acp"))
}

func TestACPNodeClientMockRunner(t *testing.T) {
	p := startServe(t, cleanEnv(), "--sandbox", "on")
	runNodeClient(t, acpEnv("TETHER_AUTH_TOKEN="+testToken), "--agent", "mock", "--runner", "http://"+p.addr)
}
