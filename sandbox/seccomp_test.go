//go:build linux && (amd64 || arm64)

package sandbox_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tetherhq/tether/sandbox"
)

// probeCalls are system calls made with arguments that do nothing (a null
// pointer, a bad descriptor, a missing path), so that the probe is safe to
// run on the host too: there the kernel answers with its own error (or
// success), inside the filter answers EPERM or ENOSYS first.
var probeCalls = []struct {
	name string
	call func() error
}{
	{"keyctl", func() error {
		_, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_PROCESS_KEYRING, 0, 0, 0)
		return err
	}},
	{"add_key", func() error { return raw(unix.SYS_ADD_KEY, 0, 0, 0, 0) }},
	{"ptrace", func() error { return raw(unix.SYS_PTRACE, unix.PTRACE_PEEKDATA, uintptr(os.Getpid()), 0) }},
	{"process_vm_readv", func() error { return raw(unix.SYS_PROCESS_VM_READV, uintptr(os.Getpid()), 0, 0, 0, 0, 0) }},
	{"perf_event_open", func() error { return raw(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0) }},
	{"bpf", func() error { return raw(unix.SYS_BPF, 0, 0, 0) }},
	{"init_module", func() error { return raw(unix.SYS_INIT_MODULE, 0, 0, 0) }},
	{"finit_module", func() error { return raw(unix.SYS_FINIT_MODULE, ^uintptr(0), 0, 0) }},
	{"open_by_handle_at", func() error { return raw(unix.SYS_OPEN_BY_HANDLE_AT, ^uintptr(0), 0, 0) }},
	{"name_to_handle_at", func() error { return raw(unix.SYS_NAME_TO_HANDLE_AT, ^uintptr(0), 0, 0, 0, 0) }},
	{"swapon", func() error { return raw(unix.SYS_SWAPON, 0, 0) }},
	{"userfaultfd", func() error {
		fd, _, errno := unix.RawSyscall(unix.SYS_USERFAULTFD, 1 /* UFFD_USER_MODE_ONLY */, 0, 0)
		if errno == 0 {
			unix.Close(int(fd))
			return nil
		}
		return errno
	}},
	{"io_uring_setup", func() error { return raw(unix.SYS_IO_URING_SETUP, 1, 0) }},
	{"setns", func() error { return raw(unix.SYS_SETNS, ^uintptr(0), 0) }},
	{"mount", func() error {
		return unix.Mount("none", "/nonexistent-tether-probe", "tmpfs", 0, "")
	}},
	{"clone3", func() error { return raw(unix.SYS_CLONE3, 0, 0) }},
	{"unshare_newtime", func() error { return raw(unix.SYS_UNSHARE, unix.CLONE_NEWTIME) }},
}

func raw(nr uintptr, args ...uintptr) error {
	var a [6]uintptr
	copy(a[:], args)
	_, _, errno := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	if errno == 0 {
		return nil
	}
	return errno
}

// syscallProbe prints "name ERRNO" (or "name ok") for each probe call.
func syscallProbe() {
	for _, c := range probeCalls {
		res := "ok"
		if err := c.call(); err != nil {
			var errno unix.Errno
			if errors.As(err, &errno) {
				res = unix.ErrnoName(errno)
			} else {
				res = err.Error()
			}
		}
		fmt.Printf("%s %s\n", c.name, res)
	}
}

// probeResults parses syscallProbe's output.
func probeResults(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, res, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("probe printed %q", out)
		}
		m[name] = res
	}
	if len(m) != len(probeCalls) {
		t.Fatalf("probe printed %d results, want %d: %q", len(m), len(probeCalls), out)
	}
	return m
}

// The filters refuse each call they name inside a real sandbox: the agent
// (FilterAgent with NestedSandboxes, FilterStrict without) and its tools in
// a nested sandbox (FilterStrict), while on the host the same calls reach
// the kernel and get its own answer.
func TestSeccompRefuses(t *testing.T) {
	requireBwrap(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), probeEnv+"=1")
	hostOut, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe on the host: %v %s", err, hostOut)
	}
	host := probeResults(t, string(hostOut))

	f := newFixture(t)
	inside := func(p sandbox.Policy, viaBash bool) map[string]string {
		t.Helper()
		p.ReadOnly = append(p.ReadOnly, exe)
		p.Env = map[string]string{probeEnv: "1"}
		var r result
		if viaBash {
			r = bash(t, p, sandbox.BashCommand(p, probeEnv+"=1 "+exe))
		} else {
			r = run(t, p, exe)
		}
		if r.code != 0 {
			t.Fatalf("probe inside: exit %d %s %s", r.code, r.stdout, r.stderr)
		}
		return probeResults(t, r.stdout)
	}
	strictPolicy := f.policy()
	nested := f.policy()
	nested.Network, nested.NestedSandboxes = true, true
	runs := map[string]map[string]string{
		"agent (strict)":         inside(strictPolicy, false),
		"agent (nested)":         inside(nested, false),
		"tool in nested sandbox": inside(nested, true),
	}

	refusedEverywhere := map[string]string{
		"keyctl": "EPERM", "add_key": "EPERM", "ptrace": "EPERM", "process_vm_readv": "EPERM",
		"perf_event_open": "EPERM", "bpf": "EPERM", "init_module": "EPERM", "finit_module": "EPERM",
		"open_by_handle_at": "EPERM", "name_to_handle_at": "EPERM", "swapon": "EPERM", "userfaultfd": "EPERM",
		"io_uring_setup": "ENOSYS",
	}
	refusedStrict := map[string]string{"setns": "EPERM", "mount": "EPERM", "clone3": "ENOSYS", "unshare_newtime": "EPERM"}
	for name, res := range runs {
		for call, want := range refusedEverywhere {
			if res[call] != want {
				t.Errorf("%s: %s = %s, want %s", name, call, res[call], want)
			}
		}
		for call, want := range refusedStrict {
			if name == "agent (nested)" {
				continue
			}
			if res[call] != want {
				t.Errorf("%s: %s = %s, want %s", name, call, res[call], want)
			}
		}
	}
	// Where the kernel would not refuse a call anyway, the refusal above
	// is the filter's: the host's answer differs.
	for call, want := range refusedEverywhere {
		if host[call] == want {
			t.Logf("host refuses %s too (%s): not a proof of the filter here", call, host[call])
		}
	}
	for _, call := range []string{"keyctl", "ptrace", "process_vm_readv", "io_uring_setup", "setns", "clone3"} {
		if host[call] == "EPERM" || host[call] == "ENOSYS" {
			t.Errorf("host: %s = %s; the probe call should reach the kernel", call, host[call])
		}
	}
	// The nested agent keeps what building a sandbox takes.
	for _, call := range []string{"setns", "clone3"} {
		if got := runs["agent (nested)"][call]; got == "EPERM" || got == "ENOSYS" {
			t.Errorf("agent (nested): %s = %s, want the kernel's answer", call, got)
		}
	}
}

// Creating a user namespace, the way into most kernel attack surface, is
// refused to an agent under FilterStrict and to its tools, but not to an
// agent that builds nested sandboxes.
func TestSeccompUserNamespaces(t *testing.T) {
	requireBwrap(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skipf("unshare (util-linux) not installed: %v", err)
	}
	f := newFixture(t)
	script := "unshare -Ur true && echo made || echo refused"
	if r := sh(t, f.policy(), script); r.stdout != "refused\n" || !strings.Contains(r.stderr, "Operation not permitted") {
		t.Errorf("strict: %q %s", r.stdout, r.stderr)
	}
	p := f.policy()
	p.Network, p.NestedSandboxes = true, true
	if r := sh(t, p, script); r.stdout != "made\n" {
		t.Errorf("nested agent: %q %s", r.stdout, r.stderr)
	}
	if r := bash(t, p, sandbox.BashCommand(p, script)); r.stdout != "refused\n" {
		t.Errorf("tool: %q %s", r.stdout, r.stderr)
	}
}
