package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testkit/shimclient"
)

// Command lines and environments the shim refuses, each with the reason
// and the usage exit status, before it announces anything.
func TestShimRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--mock", "--agent", "codex"}, nil, "contradict"},
		{nil, []string{"AGENT_PORT=x"}, `AGENT_PORT "x" is not a port`},
		{[]string{"--agent", "gemini"}, []string{"AGENT_PORT=0"}, `no agent "gemini"`},
		{[]string{"--mock"}, []string{"AGENT_PORT=0", "AGENT_BOOTSTRAP={"}, "AGENT_BOOTSTRAP is not JSON"},
	} {
		dir := t.TempDir()
		r := tether(t, dir, "", tc.env, append([]string{"shim", "--workspace", filepath.Join(dir, "ws")}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stdout, "port") {
			t.Errorf("shim %v %v: exit %d\nstdout %s\nstderr %s", tc.args, tc.env, r.code, r.stdout, r.stderr)
		}
	}
}

// The mock shim as the backend launches it: the port announced, a run to
// its completion, and SIGTERM ends it cleanly.
func TestShimMockLaunched(t *testing.T) {
	dir := t.TempDir()
	child := shimclient.Launch(t, nil, `{"backendUrl":"http://127.0.0.1:9","agentId":"a1"}`, tetherPath(),
		"shim", "--mock", "--workspace", filepath.Join(dir, "ws"), "--data-dir", filepath.Join(t.TempDir(), "data"))
	c := &shimclient.Client{T: t, Base: "http://localhost:" + strconv.Itoa(child.Port), AgentID: "a1"}
	events := c.Events("")
	c.Must(200, "POST", "/spawn", map[string]any{"agentId": "a1", "role": "r", "description": "hello", "workstream": "w",
		"projectBrief": map[string]any{"title": "t", "description": "d"}}, nil)
	done := events.Until("completion", 30*time.Second)
	if done[len(done)-1].Str("outcome") != "success" {
		t.Errorf("completion %+v", done[len(done)-1].Event)
	}
	var cp struct {
		Checkpoint struct {
			SDK            string `json:"sdk"`
			ScriptPosition int    `json:"scriptPosition"`
		} `json:"checkpoint"`
	}
	var raw map[string]any
	c.Must(200, "POST", "/checkpoint", map[string]any{"decisionId": ""}, &raw)
	c.Must(200, "POST", "/checkpoint", map[string]any{"decisionId": ""}, &cp)
	events.Close()
	child.Stop(t)
	if code := child.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %d after SIGTERM\n%s", code, child.Stderr())
	}
	if cp.Checkpoint.SDK != "mock" || cp.Checkpoint.ScriptPosition != 1 {
		t.Fatalf("checkpoint %+v", cp)
	}

	// Another shim process resumes the mock from its script position.
	other := shimclient.Launch(t, nil, "", tetherPath(), "shim", "--mock", "--workspace", filepath.Join(dir, "ws"))
	c2 := &shimclient.Client{T: t, Base: "http://localhost:" + strconv.Itoa(other.Port), AgentID: "a1"}
	events2 := c2.Events("")
	c2.Must(200, "POST", "/resume", raw, nil)
	again := events2.Until("completion", 30*time.Second)
	if s := again[len(again)-1].Str("summary"); !strings.Contains(s, "Mock reply to turn 2") {
		t.Errorf("resumed in another process: %q", s)
	}
}

// /health measures: the memory of the shim's process tree and the disk its
// workspace takes (a 2 MiB file in it shows).
func TestShimHealthMeasures(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 2<<20)
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.WriteFile(filepath.Join(ws, "data.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	child := shimclient.Launch(t, nil, "", tetherPath(), "shim", "--mock", "--workspace", ws)
	c := &shimclient.Client{T: t, Base: "http://localhost:" + strconv.Itoa(child.Port), AgentID: "a1"}
	var health struct {
		ResourceUsage struct {
			CPUPercent float64 `json:"cpuPercent"`
			MemoryMb   float64 `json:"memoryMb"`
			DiskMb     float64 `json:"diskMb"`
		} `json:"resourceUsage"`
	}
	c.Must(200, "GET", "/health", nil, &health)
	child.Stop(t)
	u := health.ResourceUsage
	if u.MemoryMb < 5 || u.DiskMb < 2 || u.DiskMb > 3 || u.CPUPercent < 0 || u.CPUPercent > 100*float64(runtime.NumCPU()) {
		t.Fatalf("resource usage %+v", u)
	}
}
