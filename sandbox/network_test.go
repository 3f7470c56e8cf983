package sandbox_test

import (
	"strconv"
	"strings"
	"testing"
)

// connect is a bash script that connects to the host listener and says
// whether it got through.
func connect(l *listener) string {
	return "if exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(l.port()) + "; then read -r line <&3; echo \"connected: $line\"; else echo refused; fi"
}

func TestNetworkOff(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	l := listen(t)
	p := f.policy()
	p.Network = false
	r := bash(t, p, connect(l))
	if r.stdout != "refused\n" || l.accepted.Load() != 0 {
		t.Fatalf("stdout %q stderr %s accepted %d", r.stdout, r.stderr, l.accepted.Load())
	}
}

func TestNetworkOn(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	l := listen(t)
	p := f.policy()
	p.Network = true
	r := bash(t, p, connect(l))
	if r.stdout != "connected: hello from the host\n" || l.accepted.Load() != 1 {
		t.Fatalf("stdout %q stderr %s accepted %d", r.stdout, r.stderr, l.accepted.Load())
	}
}

func TestBashCommandHasNoNetwork(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	l := listen(t)
	p := f.policy()
	p.Network = true // the agent process has network; its tools must not
	p.NestedSandboxes = true
	cmd := connect(l) + "; echo from-tool > tool.txt && cat tool.txt; id -u"
	r := bash(t, p, sandboxBash(p, cmd))
	if r.stdout != "refused\nfrom-tool\n1000\n" || l.accepted.Load() != 0 {
		t.Fatalf("stdout %q stderr %s accepted %d", r.stdout, r.stderr, l.accepted.Load())
	}
	if !exists(f.ws + "/tool.txt") {
		t.Fatal("the tool's write to the workspace did not reach the host")
	}
	// Outside the workspace it is still read-only, hidden dirs still hidden.
	r = bash(t, p, sandboxBash(p, "echo x > /etc/tool-escape || echo ro; ls -A "+f.root))
	if r.stdout != "ro\na\n" {
		t.Fatalf("stdout %q stderr %s", r.stdout, r.stderr)
	}
}

func TestBashCommandUnchanged(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	l := listen(t)
	p := f.policy()
	p.Network, p.ToolNetwork = true, true
	cmd := connect(l)
	if got := sandboxBash(p, cmd); got != cmd {
		t.Fatalf("ToolNetwork: command rewritten to %q", got)
	}
	if r := bash(t, p, sandboxBash(p, cmd)); !strings.HasPrefix(r.stdout, "connected") || l.accepted.Load() != 1 {
		t.Fatalf("ToolNetwork: stdout %q stderr %s", r.stdout, r.stderr)
	}
	p.Network, p.ToolNetwork = false, false
	if got := sandboxBash(p, cmd); got != cmd {
		t.Fatalf("no network at all: command rewritten to %q", got)
	}
	if r := bash(t, p, sandboxBash(p, cmd)); r.stdout != "refused\n" || l.accepted.Load() != 1 {
		t.Fatalf("no network: stdout %q", r.stdout)
	}
}
