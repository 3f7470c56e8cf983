package gemini

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetherhq/tether/driver"
)

// proxies is a key proxy stand-in that records what it was asked to hide.
type proxies struct {
	upstream string
	creds    map[string]string
}

func (p *proxies) Behind(upstream string, creds map[string]string) (string, error) {
	p.upstream, p.creds = upstream, creds
	return "http://127.0.0.1:9/proxy", nil
}

func (p *proxies) StandIn() string { return "stand-in" }

// With key proxies the agent gets the proxy and a stand-in, never the
// key; the proxy gets the key in Gemini's header and the real upstream.
func TestProvideHidesTheKey(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"GEMINI_API_KEY": "real-key", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:1"}
	p := &proxies{}
	prov, err := provide(driver.ProviderRequest{Env: env, Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }, Proxies: p})
	if err != nil {
		t.Fatal(err)
	}
	if prov.Env["GEMINI_API_KEY"] != "stand-in" || prov.Env["GOOGLE_GEMINI_BASE_URL"] != "http://127.0.0.1:9/proxy" {
		t.Fatalf("env %v", prov.Env)
	}
	if p.upstream != "http://127.0.0.1:1" || p.creds["x-goog-api-key"] != "real-key" {
		t.Fatalf("proxy got %q %v", p.upstream, p.creds)
	}
	if env["GEMINI_API_KEY"] != "real-key" {
		t.Fatal("the runner's environment was changed")
	}
	prov, err = provide(driver.ProviderRequest{Env: map[string]string{}, Getenv: func(string) string { return home }, Proxies: p})
	if err != nil || len(prov.Env) != 0 {
		t.Fatalf("no key: %v %v", prov.Env, err)
	}
}

// A session's settings are the user's with the offline ones over them.
func TestEnvironWritesOfflineSettings(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, settingsFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"ui":{"theme":"x"},"telemetry":{"enabled":true,"target":"local"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := environ(nil, home); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var doc struct {
		UI        map[string]any `json:"ui"`
		Telemetry map[string]any `json:"telemetry"`
		Security  struct {
			Auth map[string]any `json:"auth"`
		} `json:"security"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.UI["theme"] != "x" || doc.Telemetry["enabled"] != false || doc.Telemetry["target"] != "local" || doc.Security.Auth["selectedType"] != "gemini-api-key" {
		t.Fatalf("settings %s", b)
	}
	if err := os.WriteFile(path, []byte(`{`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := environ(nil, home); err == nil {
		t.Fatal("bad settings were taken")
	}
}
