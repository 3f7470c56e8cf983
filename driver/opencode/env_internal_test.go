package opencode

import (
	"maps"
	"testing"

	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/internal/agentproc"
)

// OpenCode starts with what keeps it offline, whatever the front end: each
// switch of offlineEnv unless Env sets it (the operator's OPENCODE_PURE=0
// wins), and in each session's home an npm configuration that keeps its
// plugin install off the registry, unless HomeFiles bring their own.
func TestServerEnvOffline(t *testing.T) {
	d := &Driver{cfg: driver.Config{Env: []string{"PATH=/bin", "OPENCODE_PURE=0", "npm_config_registry=http://127.0.0.1:9/"}}}
	env, err := d.env("/h", "pw", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := agentproc.EnvMap(env)
	for k, v := range offlineEnv() {
		if k != "OPENCODE_PURE" && m[k] != v {
			t.Errorf("%s=%q, want %q", k, m[k], v)
		}
	}
	if m["OPENCODE_PURE"] != "0" || m["npm_config_registry"] != "http://127.0.0.1:9/" || len(env) != len(m) {
		t.Errorf("the operator's settings were not kept: %q", env)
	}

	files := d.homeFiles()
	if string(files[homeNpmrc]) != "offline=true\n" {
		t.Errorf("home files %q", files)
	}
	own := map[string][]byte{homeConfig: []byte("{}"), homeNpmrc: []byte("registry=http://127.0.0.1:9/\n")}
	d.cfg.HomeFiles = own
	if got := d.homeFiles(); !maps.EqualFunc(got, own, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Errorf("the operator's own npm configuration was replaced: %q", got)
	}
	d.cfg.HomeFiles = map[string][]byte{homeConfig: []byte("{}")}
	if got := d.homeFiles(); len(got) != 2 || len(d.cfg.HomeFiles) != 1 {
		t.Errorf("home files %q; the configured ones changed to %q", got, d.cfg.HomeFiles)
	}
}

// The kind's slice of the runner's environment: its model APIs' keys, its
// own switches and the operator's npm settings, nothing else.
func TestKindEnviron(t *testing.T) {
	environ := []string{"PATH=/bin", "OPENAI_API_KEY=o", "OPENCODE_PURE=0", "OPENCODE_DISABLE_SHARE=1", "npm_config_registry=http://r/",
		"NPM_CONFIG_USERCONFIG=/etc/npmrc", "TETHER_AUTH_TOKEN=t", "HOME=/root", "CODEX_HOME=/c"}
	got := registration().Environ(environ, nil)
	want := map[string]string{"PATH": "/bin", "OPENAI_API_KEY": "o", "OPENCODE_PURE": "0", "OPENCODE_DISABLE_SHARE": "1",
		"npm_config_registry": "http://r/", "NPM_CONFIG_USERCONFIG": "/etc/npmrc"}
	if !maps.Equal(got, want) {
		t.Errorf("environ %v, want %v", got, want)
	}
}
