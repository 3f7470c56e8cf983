package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/tetherhq/tether/driver"
)

// upstream is a model API that records the credentials each request
// brought.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "path auth x-api-key"
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.URL.Path+" "+r.Header.Get("Authorization")+" "+r.Header.Get("x-api-key"))
		u.mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) last() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		return ""
	}
	return u.seen[len(u.seen)-1]
}

// call sends a request as an agent would: to base+path with the key in
// header.
func call(t *testing.T, base, path, header, key string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", strings.TrimSuffix(base, "/")+path, strings.NewReader("{}"))
	if header == "Authorization" {
		key = "Bearer " + key
	}
	req.Header.Set(header, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func getenvFrom(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// provide runs kind's provider wiring as a runner does: with proxies (a
// sandboxed runner's) the keys stay behind them.
func provide(t *testing.T, kind string, env, getenv map[string]string, proxies *keyProxies) (driver.Provision, error) {
	t.Helper()
	k, ok := driver.Lookup(kind)
	if !ok {
		t.Fatalf("no agent kind %s registered", kind)
	}
	req := driver.ProviderRequest{Env: env, Getenv: getenvFrom(getenv)}
	if proxies != nil {
		req.Proxies = proxies
	}
	return k.Provide(req)
}

// Unsandboxed, Codex gets the runner's config.toml as it is, and its key.
func TestCodexProviderCopiesTheRunnersConfig(t *testing.T) {
	home := t.TempDir()
	cfg := "model = \"gpt-5.5\"\n# the operator's comment\n"
	writeFile(t, filepath.Join(home, ".codex", "config.toml"), cfg)
	p, err := provide(t, "codex", map[string]string{"OPENAI_API_KEY": "sk-real"}, map[string]string{"HOME": home}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.HomeFiles[".codex/config.toml"]) != cfg || p.Env["OPENAI_API_KEY"] != "sk-real" {
		t.Fatalf("files %q env %v", p.HomeFiles, p.Env)
	}
}

// Sandboxed, no real key is left in Codex's config or environment, and
// every provider still reaches its upstream with the real key: the
// config's own provider through the proxy its base_url now names, the
// built-in one through OPENAI_BASE_URL.
func TestCodexProviderKeepsKeysBehindProxies(t *testing.T) {
	custom, builtin := newUpstream(t), newUpstream(t)
	codexHome := t.TempDir()
	writeFile(t, filepath.Join(codexHome, "config.toml"), `model_provider = "corp"
[model_providers.corp]
base_url = "`+custom.URL+`/v1"
env_key = "CORP_KEY"
wire_api = "responses"
[model_providers.direct]
base_url = "`+custom.URL+`/direct"
experimental_bearer_token = "tok-in-file"
`)
	env := map[string]string{"CORP_KEY": "sk-corp", "OPENAI_API_KEY": "sk-openai", "OPENAI_BASE_URL": builtin.URL + "/v1"}
	proxies := newKeyProxies(quietLog())
	defer proxies.Close()
	p, err := provide(t, "codex", env, map[string]string{"CODEX_HOME": codexHome}, proxies)
	if err != nil {
		t.Fatal(err)
	}
	file := string(p.HomeFiles[".codex/config.toml"])
	for _, secret := range []string{"sk-corp", "sk-openai", "tok-in-file"} {
		if strings.Contains(file, secret) || strings.Contains(strings.Join(envList(p.Env), " "), secret) {
			t.Fatalf("%s is visible to the agent: %s %v", secret, file, p.Env)
		}
	}
	var doc struct {
		ModelProvider  string `toml:"model_provider"`
		ModelProviders map[string]struct {
			BaseURL string `toml:"base_url"`
			EnvKey  string `toml:"env_key"`
			Bearer  string `toml:"experimental_bearer_token"`
		} `toml:"model_providers"`
	}
	if err := toml.Unmarshal([]byte(file), &doc); err != nil {
		t.Fatal(err)
	}
	corp := doc.ModelProviders["corp"]
	if doc.ModelProvider != "corp" || corp.EnvKey != "CORP_KEY" || p.Env["CORP_KEY"] != proxies.StandIn() {
		t.Fatalf("config %+v env %v", doc, p.Env)
	}
	if code := call(t, corp.BaseURL, "/responses", "Authorization", p.Env["CORP_KEY"]); code != 200 || custom.last() != "/v1/responses Bearer sk-corp " {
		t.Fatalf("corp: %d %q", code, custom.last())
	}
	direct := doc.ModelProviders["direct"]
	if code := call(t, direct.BaseURL, "/responses", "Authorization", direct.Bearer); code != 200 || custom.last() != "/direct/responses Bearer tok-in-file " {
		t.Fatalf("direct: %d %q", code, custom.last())
	}
	if code := call(t, p.Env["OPENAI_BASE_URL"], "/responses", "Authorization", p.Env["OPENAI_API_KEY"]); code != 200 || builtin.last() != "/v1/responses Bearer sk-openai " {
		t.Fatalf("built-in: %d %q", code, builtin.last())
	}
	if code := call(t, corp.BaseURL, "/responses", "Authorization", "sk-guess"); code != http.StatusUnauthorized {
		t.Fatalf("a wrong stand-in got %d", code)
	}
}

// Sandboxed, OpenCode's providers reach their upstreams through proxies:
// a key written in the file, a key in a variable the file names, and the
// built-in Anthropic provider's key from the environment (sent as
// x-api-key); nothing real is left for the agent to read.
func TestOpenCodeProviderKeepsKeysBehindProxies(t *testing.T) {
	fake, corp, anthropic := newUpstream(t), newUpstream(t), newUpstream(t)
	cfgHome := t.TempDir()
	writeFile(t, filepath.Join(cfgHome, "opencode", "opencode.json"), `{
  "model": "fake/fake-model",
  "provider": {
    "fake": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "`+fake.URL+`/v1", "apiKey": "sk-in-file"}},
    "corp": {"options": {"baseURL": "`+corp.URL+`/v1", "apiKey": "{env:OPENAI_API_KEY}"}},
    "anthropic": {"options": {"baseURL": "`+anthropic.URL+`/v1"}}
  }
}`)
	env := map[string]string{"OPENAI_API_KEY": "sk-openai", "ANTHROPIC_API_KEY": "sk-ant"}
	proxies := newKeyProxies(quietLog())
	defer proxies.Close()
	p, err := provide(t, "opencode", env, map[string]string{"XDG_CONFIG_HOME": cfgHome}, proxies)
	if err != nil {
		t.Fatal(err)
	}
	file := string(p.HomeFiles[".config/opencode/opencode.json"])
	for _, secret := range []string{"sk-in-file", "sk-openai", "sk-ant"} {
		if strings.Contains(file, secret) || strings.Contains(strings.Join(envList(p.Env), " "), secret) {
			t.Fatalf("%s is visible to the agent: %s %v", secret, file, p.Env)
		}
	}
	var doc struct {
		Model    string `json:"model"`
		Provider map[string]struct {
			Options struct {
				BaseURL string `json:"baseURL"`
				APIKey  string `json:"apiKey"`
			} `json:"options"`
		} `json:"provider"`
	}
	if err := json.Unmarshal([]byte(file), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Model != "fake/fake-model" || doc.Provider["corp"].Options.APIKey != "{env:OPENAI_API_KEY}" {
		t.Fatalf("config changed beyond the keys: %s", file)
	}
	checks := []struct {
		provider, header, key, want string
		up                          *upstream
	}{
		{"fake", "Authorization", doc.Provider["fake"].Options.APIKey, "/v1/chat/completions Bearer sk-in-file ", fake},
		{"corp", "Authorization", p.Env["OPENAI_API_KEY"], "/v1/chat/completions Bearer sk-openai ", corp},
		{"anthropic", "x-api-key", p.Env["ANTHROPIC_API_KEY"], "/v1/chat/completions  sk-ant", anthropic},
	}
	for _, c := range checks {
		if code := call(t, doc.Provider[c.provider].Options.BaseURL, "/chat/completions", c.header, c.key); code != 200 || c.up.last() != c.want {
			t.Errorf("%s: %d %q, want %q", c.provider, code, c.up.last(), c.want)
		}
	}
}

// Without a config file, a sandboxed OpenCode still gets the built-in
// OpenAI provider behind a proxy when the runner has its key.
func TestOpenCodeProviderWithoutAFile(t *testing.T) {
	proxies := newKeyProxies(quietLog())
	defer proxies.Close()
	p, err := provide(t, "opencode", map[string]string{"OPENAI_API_KEY": "sk-openai"}, map[string]string{"HOME": t.TempDir()}, proxies)
	if err != nil {
		t.Fatal(err)
	}
	file := string(p.HomeFiles[".config/opencode/opencode.json"])
	if !strings.Contains(file, `"baseURL": "http://127.0.0.1:`) || p.Env["OPENAI_API_KEY"] != proxies.StandIn() {
		t.Fatalf("file %s env %v", file, p.Env)
	}
}

// A sandboxed runner must rewrite OpenCode's file, so one it cannot read
// as JSON stops it with the file named.
func TestOpenCodeProviderRefusesAFileItCannotRewrite(t *testing.T) {
	cfgHome := t.TempDir()
	path := filepath.Join(cfgHome, "opencode", "opencode.json")
	writeFile(t, path, "{ // a comment\n}")
	proxies := newKeyProxies(quietLog())
	defer proxies.Close()
	_, err := provide(t, "opencode", nil, map[string]string{"XDG_CONFIG_HOME": cfgHome}, proxies)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v", err)
	}
}

// Sandboxed, Claude Code's API key and auth token reach the Anthropic API
// through a proxy its base URL names; unsandboxed it gets them as they
// are.
func TestClaudeProviderKeepsKeysBehindProxies(t *testing.T) {
	anthropic := newUpstream(t)
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_AUTH_TOKEN": "tok-ant", "ANTHROPIC_BASE_URL": anthropic.URL}
	p, err := provide(t, "claude", env, nil, nil)
	if err != nil || p.Env["ANTHROPIC_API_KEY"] != "sk-ant" || p.Env["ANTHROPIC_BASE_URL"] != anthropic.URL {
		t.Fatalf("unsandboxed: %v %v", p.Env, err)
	}
	proxies := newKeyProxies(quietLog())
	defer proxies.Close()
	if p, err = provide(t, "claude", env, nil, proxies); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sk-ant", "tok-ant"} {
		if strings.Contains(strings.Join(envList(p.Env), " "), secret) {
			t.Fatalf("%s is visible to the agent: %v", secret, p.Env)
		}
	}
	if p.Env["ANTHROPIC_API_KEY"] != proxies.StandIn() || p.Env["ANTHROPIC_AUTH_TOKEN"] != proxies.StandIn() {
		t.Fatalf("env %v", p.Env)
	}
	if code := call(t, p.Env["ANTHROPIC_BASE_URL"], "/v1/messages", "x-api-key", p.Env["ANTHROPIC_API_KEY"]); code != 200 ||
		anthropic.last() != "/v1/messages  sk-ant" {
		t.Fatalf("the key through the proxy: %d %q", code, anthropic.last())
	}
	if code := call(t, p.Env["ANTHROPIC_BASE_URL"], "/v1/messages", "Authorization", p.Env["ANTHROPIC_AUTH_TOKEN"]); code != 200 ||
		anthropic.last() != "/v1/messages Bearer tok-ant " {
		t.Fatalf("the token through the proxy: %d %q", code, anthropic.last())
	}
}

// Each agent kind sees its own API's variables, never the runner's token
// nor another kind's key.
func TestAgentEnvPerKind(t *testing.T) {
	environ := []string{"PATH=/bin", "ANTHROPIC_API_KEY=a", "OPENAI_API_KEY=o", "TETHER_AUTH_TOKEN=t", "CODEX_HOME=/root/.codex", "EXTRA=x"}
	for kind, want := range map[string]string{
		"claude":   "ANTHROPIC_API_KEY=a EXTRA=x PATH=/bin",
		"codex":    "EXTRA=x OPENAI_API_KEY=o PATH=/bin",
		"opencode": "ANTHROPIC_API_KEY=a EXTRA=x OPENAI_API_KEY=o PATH=/bin",
	} {
		k, _ := driver.Lookup(kind)
		if got := strings.Join(envList(k.Environ(environ, []string{"EXTRA"})), " "); got != want {
			t.Errorf("%s: %s, want %s", kind, got, want)
		}
	}
}

func TestParseCLIFlag(t *testing.T) {
	for in, want := range map[string][2]string{
		"/opt/claude":          {"claude", "/opt/claude"},
		"codex=/opt/codex":     {"codex", "/opt/codex"},
		"opencode=opencode":    {"opencode", "opencode"},
		"./dir/a=b/claude":     {"claude", "./dir/a=b/claude"},
		"codx=/opt/codex":      {"codx", "/opt/codex"},
		"claude=/usr/bin/cl=x": {"claude", "/usr/bin/cl=x"},
	} {
		kind, path := ParseCLIFlag(in)
		if kind != want[0] || path != want[1] {
			t.Errorf("%q: %s %s", in, kind, path)
		}
	}
	cfg := Config{DataDir: t.TempDir(), CLIs: map[string]string{"codx": "/opt/codex"}}
	if _, err := cfg.resolved(); err == nil || !strings.Contains(err.Error(), `no agent kind "codx"`) {
		t.Fatalf("unknown kind: %v", err)
	}
	cfg = Config{DataDir: t.TempDir(), CLIs: map[string]string{"claude": "rel/claude", "codex": "rel/codex", "opencode": "opencode"}}
	got, err := cfg.resolved()
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(got.CLIPath) || !filepath.IsAbs(got.CLIs["codex"]) || got.CLIs["opencode"] != "opencode" || cfg.CLIs["codex"] != "rel/codex" {
		t.Fatalf("resolved %+v (given %+v)", got.CLIs, cfg.CLIs)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
