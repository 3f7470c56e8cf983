// Package gemini registers Gemini CLI (`gemini --acp`) as the agent kind
// "gemini", run by the ACP driver (package driver/acp): its CLI, its slice
// of the runner's environment, its API key behind the runner's key proxy
// when sandboxed, and a private home whose settings keep it offline but
// for its model API (no telemetry, no update check, API-key auth).
package gemini

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/acp"
	"github.com/tetherhq/tether/driver/internal/agentproc"
)

// Name is the agent kind.
const Name = "gemini"

// TestedVersion is what `gemini --version` prints for the release the
// kind is tested against.
const TestedVersion = "0.61.0"

// GeminiAPI is where the model API is when GOOGLE_GEMINI_BASE_URL is unset.
const GeminiAPI = "https://generativelanguage.googleapis.com"

// settingsFile is Gemini CLI's user settings, under its home.
const settingsFile = ".gemini/settings.json"

func init() { driver.Register(Kind()) }

// Kind is Gemini CLI as the registry knows it.
func Kind() driver.Kind {
	return driver.Kind{
		Name: Name, Title: "Gemini CLI", About: "Gemini CLI over ACP (gemini --acp)",
		Order: 40, CheckpointSDK: "gemini",
		CLI: "gemini", TestedVersion: TestedVersion,
		EnvPrefixes: []string{"GEMINI_", "GOOGLE_GEMINI_", "GOOGLE_API_KEY", "GOOGLE_GENAI_", "GOOGLE_CLOUD_"},
		Provider:    provide,
		New:         acp.Maker(Spec()),
	}
}

// Spec is how the ACP driver runs Gemini CLI. The client offers it no
// file system: Gemini CLI 0.61.0 takes only an error object whose message
// says ENOENT for a missing file, which a JSON-RPC error cannot be, so it
// could not create a file through the client; its own file tools run in
// the sandbox with it instead. A resume is a session/load; before it,
// the saved chat is moved out of the way of the fresh start that
// session/load makes first (see beforeResume), and the session waits for
// the history session/load replays after its answer (Session.streamHistory
// is not awaited; the available commands, sent from a timer, come after
// it).
func Spec() acp.Spec {
	return acp.Spec{
		Name: Name, CLI: "gemini", Args: []string{"--acp"}, TestedVersion: TestedVersion, Images: true,
		BeforeResume: beforeResume, ReplayAfterLoad: true,
		Environ:       environ,
		ModelArgs:     func(model string) []string { return []string{"--model", model} },
		WithheldModes: []string{"yolo"}, // approves every tool call itself
		MCP:           []agent.MCPTransport{agent.MCPStdio, agent.MCPHTTP, agent.MCPSSE},
	}
}

// offline are the settings every session gets over the user's own.
func offline() map[string]any {
	return map[string]any{
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": false}},
	}
}

// environ writes the session's settings (the user's, from the home files,
// with the offline ones over them) into its home.
func environ(env []string, home string) ([]string, error) {
	if home == "" {
		return env, nil
	}
	path := filepath.Join(home, settingsFile)
	doc := map[string]any{}
	raw, err := agentproc.ReadOptional(path)
	if err != nil {
		return nil, err
	}
	if raw != nil {
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("settings %s must be plain JSON: %w", settingsFile, err)
		}
	}
	merge(doc, offline())
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	return env, nil
}

// merge sets over's values in doc, object by object.
func merge(doc, over map[string]any) {
	for k, v := range over {
		sub, ok := v.(map[string]any)
		have, isMap := doc[k].(map[string]any)
		if ok && isMap {
			merge(have, sub)
			continue
		}
		doc[k] = v
	}
}

// provide hands Gemini CLI the runner's settings.json (from
// $GEMINI_CLI_HOME or ~/.gemini) for each session's home; with key
// proxies, the API key the runner holds (GEMINI_API_KEY or
// GOOGLE_API_KEY) is reached through one, and the agent gets the proxy
// as GOOGLE_GEMINI_BASE_URL and a stand-in as its key.
func provide(req driver.ProviderRequest) (driver.Provision, error) {
	dir := cmp.Or(req.Getenv("GEMINI_CLI_HOME"), req.Getenv("HOME"))
	raw, err := agentproc.ReadOptional(filepath.Join(dir, settingsFile))
	if err != nil {
		return driver.Provision{}, fmt.Errorf("gemini: %w", err)
	}
	files := map[string][]byte{}
	if raw != nil {
		files[settingsFile] = raw
	}
	env := maps.Clone(req.Env)
	if req.Proxies == nil {
		return driver.Provision{Env: env, HomeFiles: files}, nil
	}
	key := cmp.Or(req.Env["GEMINI_API_KEY"], req.Env["GOOGLE_API_KEY"])
	if key == "" {
		return driver.Provision{Env: env, HomeFiles: files}, nil
	}
	url, err := req.Proxies.Behind(cmp.Or(req.Env["GOOGLE_GEMINI_BASE_URL"], GeminiAPI), map[string]string{"x-goog-api-key": key})
	if err != nil {
		return driver.Provision{}, err
	}
	env["GOOGLE_GEMINI_BASE_URL"] = url
	for _, name := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		if env[name] != "" {
			env[name] = req.Proxies.StandIn()
		}
	}
	return driver.Provision{Env: env, HomeFiles: files}, nil
}
