package procstat

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// A command name may hold spaces and parentheses; the fields are read
// after the last ')'.
func TestParse(t *testing.T) {
	line := "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 1000 10000000 300 18446744073709551615"
	st, ok := parse([]byte(line))
	if !ok || st.State != 'S' || st.PPID != 17 || st.Start != 1000 || st.CPU != 3100*time.Millisecond ||
		st.RSS != 300*int64(os.Getpagesize()) {
		t.Fatalf("%+v %v", st, ok)
	}
	for _, bad := range []string{"1 (short) S 0", "no parenthesis", "1 (x) SS 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"} {
		if _, ok := parse([]byte(bad)); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// Only a zombie or a dead process has exited: a process asleep in D (mid
// exec, say) or stopped is still there.
func TestExited(t *testing.T) {
	for _, state := range "RSDTtIWPK" {
		if (Stat{State: byte(state)}).Exited() {
			t.Errorf("state %c counted as exited", state)
		}
	}
	for _, state := range "ZXx" {
		if !(Stat{State: byte(state)}).Exited() {
			t.Errorf("state %c counted as alive", state)
		}
	}
}

// A child of this process is listed under it, with this process as its
// parent and a start no earlier than this one's.
func TestReadAndChildren(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	self, err := Read(os.Getpid())
	if err != nil || self.RSS <= 0 {
		t.Fatalf("self %+v %v", self, err)
	}
	child, err := Read(cmd.Process.Pid)
	if err != nil || child.PPID != os.Getpid() || child.Start < self.Start {
		t.Fatalf("child %+v %v (self %+v)", child, err, self)
	}
	if kids := NewChildLister()(os.Getpid()); !slices.Contains(kids, cmd.Process.Pid) {
		t.Fatalf("children %v lack %d", kids, cmd.Process.Pid)
	}
	if _, err := Read(1 << 30); !os.IsNotExist(err) {
		t.Fatalf("a pid that is not there: %v", err)
	}
}
