package fakeopenai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/testenv"
)

// envMap reads an environment list; a variable set twice is an error.
func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("malformed %q", kv)
		}
		if _, dup := m[k]; dup {
			t.Fatalf("%s set twice", k)
		}
		m[k] = v
	}
	return m
}

func TestCodexEnv(t *testing.T) {
	home := t.TempDir()
	env, err := testenv.CodexEnv(home, "http://127.0.0.1:1234")
	if err != nil {
		t.Fatal(err)
	}
	m := envMap(t, env)
	codexHome := filepath.Join(home, ".codex")
	if m["HOME"] != home || m["CODEX_HOME"] != codexHome || m["OPENAI_API_KEY"] != "sk-fake" || m["PATH"] == "" {
		t.Errorf("env %v", m)
	}
	// Codex refuses its helper binaries when CODEX_HOME is under TMPDIR.
	if rel, err := filepath.Rel(m["TMPDIR"], codexHome); err != nil || !strings.HasPrefix(rel, "..") {
		t.Errorf("TMPDIR %q contains CODEX_HOME %q", m["TMPDIR"], codexHome)
	}
	if fi, err := os.Stat(m["TMPDIR"]); err != nil || !fi.IsDir() {
		t.Errorf("TMPDIR: %v", err)
	}
	config, err := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`model_provider = "fake"`, `base_url = "http://127.0.0.1:1234/v1"`, `wire_api = "responses"`,
		`request_max_retries = 0`, `stream_max_retries = 0`, `check_for_update_on_startup = false`,
		"[analytics]\nenabled = false", `plugins = false`,
	} {
		if !strings.Contains(string(config), line) {
			t.Errorf("config.toml lacks %q:\n%s", line, config)
		}
	}
}

func TestOpenCodeEnv(t *testing.T) {
	for _, ask := range []bool{false, true} {
		home := t.TempDir()
		env, err := testenv.OpenCodeEnv(home, "http://127.0.0.1:1234/", ask)
		if err != nil {
			t.Fatal(err)
		}
		m := envMap(t, env)
		for _, k := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "TMPDIR"} {
			if !strings.HasPrefix(m[k], home+string(filepath.Separator)) {
				t.Errorf("%s=%q is not inside home", k, m[k])
			}
		}
		if m["OPENCODE_PURE"] != "1" || m["OPENCODE_DISABLE_MODELS_FETCH"] != "1" || m["npm_config_registry"] != "http://127.0.0.1:1234/npm/" {
			t.Errorf("env %v", m)
		}
		b, err := os.ReadFile(filepath.Join(m["XDG_CONFIG_HOME"], "opencode", "opencode.json"))
		if err != nil {
			t.Fatal(err)
		}
		var config struct {
			Model      string
			SmallModel string `json:"small_model"`
			Provider   map[string]struct {
				NPM     string
				Options struct{ BaseURL string }
			}
			Permission map[string]string
		}
		if err := json.Unmarshal(b, &config); err != nil {
			t.Fatalf("opencode.json: %v", err)
		}
		p := config.Provider["fake"]
		if config.SmallModel != testenv.OpenCodeModel || p.NPM != "@ai-sdk/openai-compatible" || p.Options.BaseURL != "http://127.0.0.1:1234/v1" {
			t.Errorf("opencode.json %s", b)
		}
		if (config.Permission["bash"] == "ask") != ask {
			t.Errorf("askPermissions %v, permission %v", ask, config.Permission)
		}
	}
}

func TestEnvBadBaseURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:1234", "ftp://127.0.0.1", "http://", "http://h/?q=1", "http://h\x7f"} {
		if _, err := testenv.CodexEnv(t.TempDir(), u); !errors.Is(err, testenv.ErrBaseURL) {
			t.Errorf("CodexEnv(%q): %v, want ErrBaseURL", u, err)
		}
		if _, err := testenv.OpenCodeEnv(t.TempDir(), u, false); !errors.Is(err, testenv.ErrBaseURL) {
			t.Errorf("OpenCodeEnv(%q): %v, want ErrBaseURL", u, err)
		}
	}
}

// TestGroupCommandKillsGroup checks what the real-CLI runs rely on: on
// timeout, the CLI and what it started in the background are all killed.
func TestGroupCommandKillsGroup(t *testing.T) {
	marker := fmt.Sprintf("fakeopenai-group-test-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	// The inner shell, a grandchild, carries the marker as its $0.
	cmd := testenv.GroupCommand(ctx, "sh", "-c", `sh -c 'sleep 300; :' `+marker+` & wait`)
	start := time.Now()
	err := cmd.Run()
	if took := time.Since(start); err == nil || took > 5*time.Second {
		t.Fatalf("Run: %v after %v, want killed at the timeout", err, took)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(testenv.PIDsWithArg(marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %v outlived the timeout", testenv.PIDsWithArg(marker))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := testenv.KillGroup(cmd); err != nil {
		t.Errorf("KillGroup of a gone group: %v", err)
	}
}
