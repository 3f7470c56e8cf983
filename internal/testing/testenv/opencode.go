package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// OpenCodeCLIEnv names the variable that overrides where the real opencode
// CLI is.
const OpenCodeCLIEnv = "TETHER_OPENCODE_CLI"

// OpenCodeModel is the model OpenCodeEnv's config defines and picks, as
// OpenCode names it (provider/model); the fake API sees "fake-model".
const OpenCodeModel = "fake/fake-model"

// OpenCodeOtherModelID is a second model of the same provider, for a
// session to switch to: the fake API sees it by this name.
const OpenCodeOtherModelID = "fake-model-2"

// FindOpenCodeCLI returns the pinned real opencode CLI: $TETHER_OPENCODE_CLI,
// or the copy scripts/install-agents puts under .cache/npm. It never falls
// back to PATH.
func FindOpenCodeCLI() (string, bool) {
	return findPinnedCLI(OpenCodeCLIEnv, "opencode")
}

// RequireOpenCodeCLI returns the real opencode CLI or skips the test with
// the reason. Tests that use it are named TestRealCLI*.
func RequireOpenCodeCLI(t testing.TB) string {
	t.Helper()
	p, ok := FindOpenCodeCLI()
	if !ok {
		t.Skipf("real opencode CLI not installed (run scripts/install-agents or set %s)", OpenCodeCLIEnv)
	}
	return p
}

// openCodeConfig is the part of opencode.json the tests set.
type openCodeConfig struct {
	Schema     string                      `json:"$schema"`
	Model      string                      `json:"model"`
	SmallModel string                      `json:"small_model"`
	Autoupdate bool                        `json:"autoupdate"`
	Share      string                      `json:"share"`
	Provider   map[string]openCodeProvider `json:"provider"`
	Permission map[string]string           `json:"permission,omitempty"`
}

type openCodeProvider struct {
	NPM     string `json:"npm"`
	Name    string `json:"name"`
	Options struct {
		BaseURL string `json:"baseURL"`
		APIKey  string `json:"apiKey"`
	} `json:"options"`
	Models map[string]openCodeModel `json:"models"`
}

type openCodeModel struct {
	Name     string `json:"name"`
	ToolCall bool   `json:"tool_call"`
	// Attachment and Modalities let a prompt's images through: OpenCode
	// puts an error text in place of an image a model does not take.
	Attachment bool `json:"attachment"`
	Modalities struct {
		Input  []string `json:"input"`
		Output []string `json:"output"`
	} `json:"modalities"`
	Limit struct {
		Context int `json:"context"`
		Output  int `json:"output"`
	} `json:"limit"`
}

// OpenCodeEnv writes $XDG_CONFIG_HOME/opencode/opencode.json (under home),
// which defines a provider "fake" speaking Chat Completions to a fake OpenAI
// API at baseURL (the server's root; "/v1" is appended) through the bundled
// @ai-sdk/openai-compatible, and picks its model for both the agent and the
// title requests. It returns the whole environment for a run with home as
// its HOME: every XDG directory inside home, and the flags that stop
// OpenCode from fetching models, updates, plugins, LSP servers and skills.
//
// OpenCode 1.18 still asks the npm registry for @opencode-ai/plugin on every
// run, to install it into its config directory in the background, whatever
// the flags (OPENCODE_PURE included). npm_config_registry sends that request
// to baseURL+"/npm/" instead, on loopback, where a fake answers 404 and
// OpenCode goes on without it.
//
// By default OpenCode's build agent runs every tool without asking; with
// askPermissions, bash and edit ask first.
func OpenCodeEnv(home, baseURL string, askPermissions bool) ([]string, error) {
	api, err := apiURL(baseURL)
	if err != nil {
		return nil, err
	}
	xdg := map[string]string{
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
	}
	tmp := filepath.Join(home, "tmp")
	for _, d := range []string{filepath.Join(xdg["XDG_CONFIG_HOME"], "opencode"), xdg["XDG_DATA_HOME"], xdg["XDG_CACHE_HOME"], xdg["XDG_STATE_HOME"], tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("testenv: opencode env: %w", err)
		}
	}
	config, err := OpenCodeConfig(baseURL, askPermissions)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(xdg["XDG_CONFIG_HOME"], "opencode", "opencode.json")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		return nil, fmt.Errorf("testenv: opencode env: %w", err)
	}
	env := []string{
		"PATH=" + cleanPath(),
		"HOME=" + home,
		"TMPDIR=" + tmp,
		"npm_config_registry=" + strings.TrimSuffix(api, "/v1") + "/npm/",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
		"OPENCODE_PURE=1",
	}
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"} {
		env = append(env, k+"="+xdg[k])
	}
	return env, nil
}

// OpenCodeConfigPath is where OpenCodeEnv writes OpenCode's config,
// relative to the home: the key of a driver's HomeFiles.
const OpenCodeConfigPath = ".config/opencode/opencode.json"

// OpenCodeConfig is the opencode.json OpenCodeEnv writes, for a driver to
// write into a session's home itself (HomeFiles at OpenCodeConfigPath).
func OpenCodeConfig(baseURL string, askPermissions bool) ([]byte, error) {
	api, err := apiURL(baseURL)
	if err != nil {
		return nil, err
	}
	config, err := json.MarshalIndent(openCodeConfigFor(api, askPermissions), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("testenv: opencode config: %w", err)
	}
	return append(config, '\n'), nil
}

func openCodeConfigFor(api string, askPermissions bool) openCodeConfig {
	var p openCodeProvider
	p.NPM = "@ai-sdk/openai-compatible"
	p.Name = "Fake OpenAI-compatible"
	p.Options.BaseURL = api
	p.Options.APIKey = "sk-fake"
	var m openCodeModel
	m.Name = "Fake Model"
	m.ToolCall = true
	m.Attachment = true
	m.Modalities.Input, m.Modalities.Output = []string{"text", "image"}, []string{"text"}
	m.Limit.Context, m.Limit.Output = 128000, 4096
	p.Models = map[string]openCodeModel{"fake-model": m, OpenCodeOtherModelID: m}
	c := openCodeConfig{
		Schema:     "https://opencode.ai/config.json",
		Model:      OpenCodeModel,
		SmallModel: OpenCodeModel,
		Share:      "disabled",
		Provider:   map[string]openCodeProvider{"fake": p},
	}
	if askPermissions {
		c.Permission = map[string]string{"bash": "ask", "edit": "ask"}
	}
	return c
}
