package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/internal/agentproc"
	"github.com/tetherhq/tether/sandbox"
)

// fakeCLI writes a shell script standing in for opencode: --version prints
// version; serve runs body.
func fakeCLI(t *testing.T, version, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "opencode")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo " + version + "; exit 0; fi\n" + body + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNewFindsAndChecksTheCLI(t *testing.T) {
	if _, err := New(driver.Config{CLIPath: filepath.Join(t.TempDir(), "missing")}); !errors.Is(err, driver.ErrCLINotFound) {
		t.Errorf("missing CLI: %v", err)
	}
	if _, err := New(driver.Config{CLIPath: t.TempDir()}); !errors.Is(err, driver.ErrCLINotFound) {
		t.Errorf("a directory as the CLI: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := New(driver.Config{}); !errors.Is(err, driver.ErrCLINotFound) {
		t.Errorf("no CLI on PATH: %v", err)
	}
	// A bare name is looked up on PATH (a runner that found opencode there
	// hands the driver its name).
	t.Setenv("PATH", filepath.Dir(fakeCLI(t, TestedVersion, "exit 1")))
	if _, err := New(driver.Config{CLIPath: "opencode"}); err != nil {
		t.Errorf("opencode on PATH by name: %v", err)
	}
	old := fakeCLI(t, "1.0.0", "exit 1")
	var ve *driver.VersionError
	if _, err := New(driver.Config{CLIPath: old}); !errors.As(err, &ve) || ve.Found != "1.0.0" || ve.Tested != TestedVersion || !errors.Is(err, driver.ErrUntestedVersion) {
		t.Errorf("untested version: %v", err)
	}
	d, err := New(driver.Config{CLIPath: old, AllowUntestedVersion: true})
	if err != nil || d.Version() != "1.0.0" || d.Name() != "opencode" {
		t.Fatalf("allowed untested version: %v", err)
	}
	c := d.Capabilities()
	if !c.Resume || !c.Fork || !c.Diff || c.Steer || len(c.Scopes) != 2 {
		t.Errorf("capabilities %+v", c)
	}
}

// A server that says where it listens but never answers fails Start with
// ErrServerNotReady within StartTimeout, and leaves nothing running.
func TestStartServerNeverHealthy(t *testing.T) {
	marker := "OPENCODE_TEST_MARKER=" + filepath.Base(t.TempDir())
	cli := fakeCLI(t, TestedVersion, "echo 'opencode server listening on http://127.0.0.1:1'\nexec sleep 60")
	d, err := New(driver.Config{CLIPath: cli, Env: []string{"PATH=/usr/bin:/bin", marker}, StartTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	_, err = d.Start(context.Background(), agent.StartRequest{Workspace: t.TempDir()})
	if !errors.Is(err, ErrServerNotReady) {
		t.Fatalf("Start: %v, want ErrServerNotReady", err)
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Errorf("Start took %v", took)
	}
	waitNoProcs(t, marker)
}

// A server that exits at once fails Start with ErrServerExited, quoting
// what it said.
func TestStartServerExits(t *testing.T) {
	cli := fakeCLI(t, TestedVersion, "echo 'bad config' >&2; exit 3")
	d, err := New(driver.Config{CLIPath: cli, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Start(context.Background(), agent.StartRequest{Workspace: t.TempDir()})
	if !errors.Is(err, ErrServerExited) || !strings.Contains(err.Error(), "bad config") {
		t.Fatalf("Start: %v, want ErrServerExited with the stderr", err)
	}
}

// Bad requests are refused before anything starts.
func TestStartRefusesBadRequests(t *testing.T) {
	cli := fakeCLI(t, TestedVersion, "exit 1")
	d, err := New(driver.Config{CLIPath: cli})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []agent.StartRequest{
		{Model: "no-slash"},
		{Options: []byte(`{"unknown":1}`)},
		{Fork: true},
	} {
		if _, err := d.Start(context.Background(), req); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("Start(%+v): %v, want ErrInvalidRequest", req, err)
		}
	}
}

// The environment: the password, the permission rules merged over the
// configured ones, and the home's HOME and XDG directories over Env.
func TestServerEnv(t *testing.T) {
	d := &Driver{cfg: driver.Config{Env: []string{"HOME=/elsewhere", "KEEP=1", `OPENCODE_PERMISSION={"webfetch":"deny","bash":"allow"}`}}}
	env, err := d.env("/h", "pw", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := agentproc.EnvMap(env)
	want := map[string]string{"HOME": "/h", "KEEP": "1", "OPENCODE_SERVER_PASSWORD": "pw", "OPENCODE_SERVER_USERNAME": "opencode",
		"XDG_CONFIG_HOME": "/h/.config", "XDG_DATA_HOME": "/h/.local/share", "OPENCODE_PERMISSION": `{"bash":"ask","edit":"ask","webfetch":"deny"}`}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s=%q, want %q", k, m[k], v)
		}
	}
	if len(env) != len(m) {
		t.Errorf("duplicate variables in %q", env)
	}
	env, _ = d.env("", "pw", false, nil)
	if agentproc.EnvMap(env)["HOME"] != "/elsewhere" || agentproc.EnvMap(env)["XDG_CONFIG_HOME"] != "" {
		t.Errorf("no home overrode the environment: %q", env)
	}
	if _, err := (&Driver{cfg: driver.Config{Env: []string{"OPENCODE_PERMISSION=[1]"}}}).env("", "pw", false, nil); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("bad OPENCODE_PERMISSION: %v", err)
	}
}

// Sandboxed, OpenCode's shell is the sandbox's tool shell: in its config,
// merged over the operator's OPENCODE_CONFIG_CONTENT (which loses any
// shell of its own), and in SHELL; and its web tools are denied.
func TestServerEnvToolShell(t *testing.T) {
	d := &Driver{cfg: driver.Config{Env: []string{"SHELL=/bin/zsh", `OPENCODE_CONFIG_CONTENT={"shell":"/bin/bash","theme":"x"}`,
		`OPENCODE_PERMISSION={"webfetch":"allow","read":"allow"}`}}}
	env, err := d.env("/h", "pw", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := agentproc.EnvMap(env)
	var content map[string]any
	if err := json.Unmarshal([]byte(m["OPENCODE_CONFIG_CONTENT"]), &content); err != nil {
		t.Fatalf("OPENCODE_CONFIG_CONTENT %q: %v", m["OPENCODE_CONFIG_CONTENT"], err)
	}
	if m["SHELL"] != sandbox.ToolShellPath || content["shell"] != sandbox.ToolShellPath || content["theme"] != "x" || len(env) != len(m) {
		t.Errorf("SHELL %q, config %v, env %q", m["SHELL"], content, env)
	}
	if want := `{"bash":"ask","edit":"ask","read":"allow","webfetch":"deny","websearch":"deny"}`; m["OPENCODE_PERMISSION"] != want {
		t.Errorf("OPENCODE_PERMISSION %s, want %s", m["OPENCODE_PERMISSION"], want)
	}
	env, _ = d.env("/h", "pw", false, nil)
	if m := agentproc.EnvMap(env); m["SHELL"] != "/bin/zsh" || m["OPENCODE_CONFIG_CONTENT"] != `{"shell":"/bin/bash","theme":"x"}` ||
		m["OPENCODE_PERMISSION"] != `{"bash":"ask","edit":"ask","read":"allow","webfetch":"allow"}` {
		t.Errorf("without the tool shell the environment changed: %q", env)
	}
	bad := &Driver{cfg: driver.Config{Env: []string{"OPENCODE_CONFIG_CONTENT=not json"}}}
	if _, err := bad.env("", "pw", true, nil); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("bad OPENCODE_CONFIG_CONTENT: %v", err)
	}
}

// A session may ask for network in its commands only where the runner's
// sandbox allows it; unsandboxed, its commands have the network anyway.
func TestStartRefusesToolNetwork(t *testing.T) {
	d := &Driver{cfg: driver.Config{Sandbox: &sandbox.Policy{}}}
	if _, err := d.Start(context.Background(), agent.StartRequest{Options: []byte(`{"tool_network":true}`)}); !errors.Is(err, ErrInvalidRequest) ||
		!strings.Contains(err.Error(), "tool_network") {
		t.Errorf("Start: %v, want ErrInvalidRequest", err)
	}
}
