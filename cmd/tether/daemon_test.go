package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/fakeorchestrator"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// `tether daemon` as a person runs it: no key yet, so it prints a pairing
// code; once confirmed it connects, and a prompt with a tool call the
// orchestrator approves runs through it; SIGTERM ends it cleanly, the key
// saved (0600).
func TestDaemonCommand(t *testing.T) {
	o, err := fakeorchestrator.Start(fakeorchestrator.Options{NoDevKey: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	data := t.TempDir()
	cmd := exec.Command(tetherPath(), "daemon", "--orchestrator", o.URL(), "--data", data, "--sandbox", "off",
		"--default-agent", "mock", "--device-key", "")
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testenv.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	codes := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`^Pairing code: (\d{6})$`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				codes <- m[1]
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
		if t.Failed() {
			t.Logf("daemon stderr:\n%s", stderr.String())
		}
	})
	var code string
	select {
	case code = <-codes:
	case <-ctx.Done():
		t.Fatal("no pairing code printed")
	}
	if err := o.Wait(ctx, func(v fakeorchestrator.View) bool { return len(v.PairRequests()) == 1 }); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Verify(ctx, code); err != nil {
		t.Fatal(err)
	}
	if err := o.Wait(ctx, func(v fakeorchestrator.View) bool { return v.Connected() && len(v.Statuses()) > 0 }); err != nil {
		t.Fatal(err)
	}
	res, err := o.Command(ctx, map[string]any{"type": "create_session"})
	if err != nil || res.Status != "ok" {
		t.Fatalf("create_session: %+v %v", res, err)
	}
	var s struct{ ID, AgentType string }
	_ = json.Unmarshal(res.Data, &s)
	if res, err := o.Command(ctx, map[string]any{"type": "send_prompt", "sessionId": s.ID, "text": "REQUEST_APPROVAL"}); err != nil || res.Status != "ok" {
		t.Fatalf("send_prompt: %+v %v", res, err)
	}
	var pid string
	if err := o.Wait(ctx, func(v fakeorchestrator.View) bool {
		for _, f := range v.Events() {
			ev := f["event"].(map[string]any)
			if ev["type"] == "mast.permission.created" {
				pid = ev["data"].(map[string]any)["permission"].(map[string]any)["id"].(string)
			}
		}
		return pid != ""
	}); err != nil {
		t.Fatal(err)
	}
	if res, err := o.Command(ctx, map[string]any{"type": "approve_permission", "sessionId": s.ID, "permissionId": pid}); err != nil || res.Status != "ok" {
		t.Fatalf("approve_permission: %+v %v", res, err)
	}
	if err := o.Wait(ctx, func(v fakeorchestrator.View) bool {
		for _, m := range v.Messages(s.ID) {
			if m.Role == "assistant" && m.Completed {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- nil
		if err != nil {
			t.Fatalf("after SIGTERM: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the daemon did not stop on SIGTERM")
	}
	fi, err := os.Stat(filepath.Join(data, "device-key.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
}

func TestDaemonCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"daemon", "--data", t.TempDir()},
		{"daemon", "--orchestrator", "http://127.0.0.1:1", "--data", t.TempDir(), "--sandbox", "off"},
		{"daemon", "--orchestrator", "ws://127.0.0.1:1", "--sandbox", "maybe"},
	} {
		cmd := exec.Command(tetherPath(), args...)
		cmd.Env = cleanEnv()
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
}

// The device key from the environment is used, and never shown in help.
func TestDaemonCommandKeyFromEnv(t *testing.T) {
	cmd := exec.Command(tetherPath(), "daemon", "--help")
	cmd.Env = cleanEnv("TETHER_DEVICE_KEY=dk_secret-in-env")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "secret-in-env") {
		t.Fatalf("help: %v\n%s", err, out)
	}
	o, err := fakeorchestrator.Start(fakeorchestrator.Options{NoDevKey: true, Keys: []string{"dk_secret-in-env"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	daemon := exec.Command(tetherPath(), "daemon", "--orchestrator", o.URL(), "--data", t.TempDir(), "--sandbox", "off")
	daemon.Env = cleanEnv("TETHER_DEVICE_KEY=dk_secret-in-env")
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = daemon.Process.Signal(syscall.SIGTERM); _ = daemon.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := o.Wait(ctx, func(v fakeorchestrator.View) bool { return v.Connected() && len(v.Statuses()) > 0 }); err != nil {
		t.Fatal("the daemon did not connect with the key from TETHER_DEVICE_KEY: ", err)
	}
}
