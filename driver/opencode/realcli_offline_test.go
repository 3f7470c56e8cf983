package opencode

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/internal/agentproc"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// outside records every request that reaches it and answers none: it
// stands for the network beyond loopback (as the proxy of every HTTP
// request, the models catalogue and the npm registry).
type outside struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string
}

func newOutside(t *testing.T) *outside {
	o := &outside{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.got = append(o.got, r.Method+" "+r.Host+r.URL.Path)
		o.mu.Unlock()
		status := http.StatusNotFound
		if r.Method == http.MethodConnect {
			status = http.StatusForbidden
		}
		http.Error(w, "offline", status)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *outside) requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.got)
}

// offlineOperator is an operator's environment and OpenCode configuration
// for the fake model API, with nothing that keeps OpenCode offline but
// what they set of npm: every HTTP request leaves through a proxy that is
// the outside, the models catalogue is the outside, and npm_config_registry
// names the outside. The configuration has a second provider, probe, whose
// package (@tether-probe/provider) is not one OpenCode bundles.
func offlineOperator(t *testing.T, fake *fakeopenai.Server, out *outside) (environ, passed []string) {
	t.Helper()
	home := t.TempDir()
	env, err := testenv.OpenCodeEnv(home, fake.URL(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == "npm_config_registry" || strings.HasPrefix(k, "OPENCODE_") {
			continue // the test's own offline switches: the driver's are under test
		}
		environ = append(environ, kv)
	}
	environ = append(environ, "npm_config_registry="+out.srv.URL+"/npm/", "OPENCODE_MODELS_URL="+out.srv.URL+"/models",
		"HTTP_PROXY="+out.srv.URL, "HTTPS_PROXY="+out.srv.URL, "http_proxy="+out.srv.URL, "https_proxy="+out.srv.URL,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
	passed = []string{"OPENCODE_MODELS_URL", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy"}

	path := filepath.Join(home, testenv.OpenCodeConfigPath)
	var config map[string]any
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &config)
	}
	if err != nil {
		t.Fatal(err)
	}
	providers := config["provider"].(map[string]any)
	probe := map[string]any{}
	for k, v := range providers["fake"].(map[string]any) {
		probe[k] = v
	}
	probe["npm"], probe["name"] = "@tether-probe/provider", "Probe"
	providers["probe"] = probe
	if data, err = json.Marshal(config); err == nil {
		err = os.WriteFile(path, data, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	return environ, passed
}

// offlineDriver is OpenCode's driver as every front end makes it from the
// registry: the kind's slice of the operator's environment (with the names
// the operator passes on), its provider wiring, its constructor.
func offlineDriver(t *testing.T, environ, passed []string) agent.Driver {
	t.Helper()
	k := registration()
	env := k.Environ(environ, passed)
	cli, err := k.Find(testenv.RequireOpenCodeCLI(t), envList(env))
	if err != nil {
		t.Fatal(err)
	}
	operator := agentproc.EnvMap(environ)
	p, err := k.Provide(driver.ProviderRequest{Env: env, Getenv: func(k string) string { return operator[k] }})
	if err != nil {
		t.Fatal(err)
	}
	d, err := k.New(driver.Config{CLIPath: cli, Env: envList(p.Env), HomeFiles: p.HomeFiles})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// envList is env as NAME=value entries, sorted, as the runner hands them.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// OpenCode as the front ends start it reaches nothing beyond loopback: not
// at start, when it installs its plugin package into its config directory
// from the npm registry, nor through a turn; the operator's npm registry
// is still the one it fetches a provider's package from.
func TestRealCLIOffline(t *testing.T) {
	fake, err := fakeopenai.Start(fakeopenai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	out := newOutside(t)
	environ, passed := offlineOperator(t, fake, out)
	env := &realEnv{fake: fake, home: t.TempDir(), ws: t.TempDir(), driver: offlineDriver(t, environ, passed)}

	r := env.start(t, agent.StartRequest{})
	r.prompt("SAY offline")
	if end := r.turnEnd(); end.Turn.Status != agent.TurnCompleted || end.Turn.Text != "offline" {
		t.Fatalf("turn %+v %+v", end.Turn, end.Error)
	}
	if err := r.s.Close(); err != nil {
		t.Fatal(err)
	}
	r.rest()
	if got := out.requests(); len(got) > 0 {
		t.Fatalf("OpenCode reached beyond loopback: %q", got)
	}

	probe := env.start(t, agent.StartRequest{Model: "probe/fake-model"})
	probe.prompt("SAY probe")
	probe.turnEnd()
	// OpenCode asks for the package as the turn fails without it; its
	// install may still be under way when the turn ends.
	want := "GET " + strings.TrimPrefix(out.srv.URL, "http://") + "/npm/@tether-probe/provider"
	for deadline := time.Now().Add(10 * time.Second); !slices.Contains(out.requests(), want); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the provider's package was not asked of the operator's registry; requests %q", out.requests())
		}
	}
}
