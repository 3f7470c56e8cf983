package transport

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const fGetPipeSz = 1032 // F_GETPIPE_SZ (fcntl.h)

func pipeCapacity(t *testing.T, f *os.File) int {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size uintptr
	var errno syscall.Errno
	if err := raw.Control(func(fd uintptr) {
		size, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, fGetPipeSz, 0)
	}); err != nil || errno != 0 {
		t.Fatalf("F_GETPIPE_SZ: %v %v", err, errno)
	}
	return int(size)
}

// A stdout pipe keeps the system's default size while its agent is quiet
// and grows once the agent writes faster than it is read.
func TestStdoutPipeGrowsOnlyWhenBusy(t *testing.T) {
	t.Parallel()
	b, _ := os.ReadFile("/proc/sys/fs/pipe-max-size")
	if max, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || max < pipeSize {
		t.Skipf("pipes cannot grow to %d bytes here", pipeSize)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defaultSize := pipeCapacity(t, r)
	r.Close()
	w.Close()

	quiet := connect(t, shell(`echo hi; exec cat`))
	if got := readLine(t, quiet); got != "hi" {
		t.Fatalf("quiet agent said %q", got)
	}
	if got := pipeCapacity(t, quiet.(*commandConn).stdout); got != defaultSize {
		t.Fatalf("quiet agent's pipe = %d bytes, want the default %d", got, defaultSize)
	}

	const lines = 2000
	busy := connect(t, shell(`yes "$1" | head -n `+strconv.Itoa(lines)+`; exec cat`, strings.Repeat("x", 1000)))
	for i := range lines {
		if got := readLine(t, busy); len(got) != 1000 {
			t.Fatalf("line %d has %d bytes", i, len(got))
		}
	}
	if got := pipeCapacity(t, busy.(*commandConn).stdout); got != pipeSize {
		t.Fatalf("busy agent's pipe = %d bytes, want %d", got, pipeSize)
	}
}
