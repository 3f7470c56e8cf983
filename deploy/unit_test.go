package deploy

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unit is a systemd unit file: its sections' keys and values, in order
// (a key may repeat). Lines ending in a backslash continue.
type unit map[string][][2]string

func parseUnit(t *testing.T, data []byte) unit {
	t.Helper()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	var cont strings.Builder
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.HasSuffix(line, "\\") {
			cont.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		line = cont.String() + line
		cont.Reset()
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") {
				t.Fatalf("line %d: bad section header %q", n, line)
			}
			section = line[1 : len(line)-1]
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" || strings.TrimSpace(k) == "" {
				t.Fatalf("line %d: not KEY=VALUE in a section: %q", n, line)
			}
			u[section] = append(u[section], [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
		}
	}
	if cont.Len() > 0 {
		t.Fatal("the last line continues into nothing")
	}
	return u
}

func (u unit) get(section, key string) (string, bool) {
	var v string
	found := false
	for _, kv := range u[section] {
		if kv[0] == key {
			v, found = kv[1], true // the last assignment wins
		}
	}
	return v, found
}

func readUnit(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("tether.service")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The unit parses, runs tether serve as its own unprivileged user with
// the tokens as a credential, and keeps its hardening.
func TestUnitKeys(t *testing.T) {
	u := parseUnit(t, readUnit(t))
	for _, s := range []string{"Unit", "Service", "Install"} {
		if len(u[s]) == 0 {
			t.Errorf("no [%s] section", s)
		}
	}
	want := map[string]string{
		"User": "tether", "Group": "tether", "StateDirectory": "tether", "StateDirectoryMode": "0700", "UMask": "0077",
		"NoNewPrivileges": "yes", "CapabilityBoundingSet": "", "AmbientCapabilities": "", "ProtectSystem": "strict",
		"ProtectHome": "yes", "PrivateTmp": "yes", "PrivateDevices": "yes", "ProtectKernelTunables": "yes",
		"ProtectKernelModules": "yes", "ProtectControlGroups": "yes", "RestrictSUIDSGID": "yes",
		"LockPersonality": "yes", "SystemCallArchitectures": "native", "LoadCredential": "tokens:/etc/tether/tokens",
		"KillSignal": "SIGTERM", "Restart": "on-failure", "ExecReload": "/bin/kill -HUP $MAINPID",
	}
	for k, v := range want {
		got, ok := u.get("Service", k)
		if !ok || got != v {
			t.Errorf("[Service] %s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	exec, _ := u.get("Service", "ExecStart")
	for _, part := range []string{"/usr/local/bin/tether serve", "--auth-token-file %d/tokens", "--data ${STATE_DIRECTORY}", "--log-format json"} {
		if !strings.Contains(strings.Join(strings.Fields(exec), " "), part) {
			t.Errorf("ExecStart %q lacks %q", exec, part)
		}
	}
	// The sandbox needs these namespaces; nothing else may be allowed.
	if ns, _ := u.get("Service", "RestrictNamespaces"); ns != "user mnt pid net ipc uts" {
		t.Errorf("RestrictNamespaces = %q", ns)
	}
	if _, ok := u.get("Service", "MemoryDenyWriteExecute"); ok {
		t.Error("MemoryDenyWriteExecute breaks the agents' JavaScript engines")
	}
	stop, _ := u.get("Service", "TimeoutStopSec")
	if d, err := time.ParseDuration(stop + "s"); err != nil || d <= 30*time.Second {
		t.Errorf("TimeoutStopSec = %q: it must outlast serve's --shutdown-timeout (30 s)", stop)
	}
	if got, _ := u.get("Install", "WantedBy"); got != "multi-user.target" {
		t.Errorf("WantedBy = %q", got)
	}
}

// systemd's own checks, where systemd-analyze is installed: verify (any
// complaint about the unit fails) and, offline, its exposure score.
func TestUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: TestUnitKeys checks the unit's keys instead")
	}
	// verify wants ExecStart's program to exist: this test's binary
	// stands in for the installed tether.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tether.service")
	data := bytes.ReplaceAll(readUnit(t), []byte("/usr/local/bin/tether"), []byte(self))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, analyze, "verify", path).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("tether.service")) {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// --offline (systemd 252) scores the unit file itself; exposure is on
	// a 0–100 scale here (10 is fully exposed at 100).
	out, err = exec.CommandContext(ctx, analyze, "security", "--offline=true", "--threshold=30", path).CombinedOutput()
	if bytes.Contains(out, []byte("unrecognized option")) || bytes.Contains(out, []byte("Unknown option")) {
		t.Logf("this systemd-analyze cannot score a unit offline: %s", bytes.TrimSpace(out))
		return
	}
	if err != nil {
		t.Fatalf("systemd-analyze security: exposure above 3.0 or an error: %v\n%s", err, out)
	}
}
