package testenv

import (
	"bytes"
	"os"
	"strconv"
	"sync"
)

// PIDsWithArg lists the live processes (zombies excluded) that have arg
// among their command-line arguments, from /proc: how tests find what an
// agent started and check that it is gone.
func PIDsWithArg(arg string) []int { return pidsWith("cmdline", arg) }

// PIDsWithEnv lists the live processes with kv ("NAME=value") in their
// environment: what a session started, marked by a variable of its own.
func PIDsWithEnv(kv string) []int { return pidsWith("environ", kv) }

// pidsWith lists the live processes whose /proc/PID/<file> (NUL-separated)
// holds entry.
func pidsWith(file, entry string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/" + file)
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		for a := range bytes.SplitSeq(data, []byte{0}) {
			if string(a) == entry && !zombie(pid) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// zombie reports whether pid has exited (and is gone or not yet reaped).
func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) state …; comm may hold anything, so read after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	return stat[i+2] == 'Z' || stat[i+2] == 'X'
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers and readers:
// a runner's log, a command's output read while it runs.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Reset empties the buffer.
func (b *SyncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
