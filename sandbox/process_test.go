package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/transport"
)

// procInfo is one live process whose command line holds a marker.
type procInfo struct {
	pid, pgid, sid int
	cmdline        string
}

// findProcs lists live (not zombie) processes whose argv contains marker.
func findProcs(t *testing.T, marker string) []procInfo {
	t.Helper()
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []procInfo
	for _, p := range paths {
		cmdline, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		dir := filepath.Dir(p)
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session …; comm may hold spaces.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 4 || fields[0] == "Z" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		pgid, _ := strconv.Atoi(fields[2])
		sid, _ := strconv.Atoi(fields[3])
		out = append(out, procInfo{pid, pgid, sid, strings.ReplaceAll(string(cmdline), "\x00", " ")})
	}
	return out
}

// waitProcs polls until count(processes with marker running cmd) == n.
func waitProcs(t *testing.T, marker, comm string, n int) []procInfo {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var match []procInfo
		for _, p := range findProcs(t, marker) {
			if strings.HasPrefix(p.cmdline, comm) {
				match = append(match, p)
			}
		}
		if len(match) == n {
			return match
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes %q with marker %s, want %d: %+v", len(match), comm, marker, n, findProcs(t, marker))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assertGone waits a little for every process with marker to be gone.
func assertGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := findProcs(t, marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
			t.Fatalf("processes left behind: %+v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// marker is a unique sleep duration: it names this test's processes in
// /proc, bwrap's included (their argv holds the script).
func marker() string {
	return fmt.Sprintf("%d.%09d", 3000+os.Getpid()%1000, time.Now().UnixNano()%1e9)
}

func TestProcessGroupKill(t *testing.T) {
	requireBwrap(t)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			f := newFixture(t)
			m := marker()
			sc, err := f.policy().Wrap("/bin/sh", []string{"-c", "sleep " + m + " & sleep " + m + " & wait"})
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			cmd := command(context.Background(), sc)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sleeps := waitProcs(t, m, "sleep", 2)
			pgid := cmd.Process.Pid
			// --new-session: the agent is in a session (and group) of its
			// own inside, not in the group we made.
			t.Logf("bwrap pid/pgid %d; inside: %+v", pgid, sleeps)
			if err := syscall.Kill(-pgid, sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("bwrap exited 0 after", sig)
				}
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				<-done
				t.Fatal("bwrap outlived", sig)
			}
			assertGone(t, m)
		})
	}
}

// When the agent's main process exits, what it left running in the
// background dies with the sandbox's pid namespace.
func TestBackgroundDiesWithAgent(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	m := marker()
	r := sh(t, f.policy(), "sleep "+m+" & echo started")
	if r.stdout != "started\n" {
		t.Fatalf("stdout %q stderr %s", r.stdout, r.stderr)
	}
	assertGone(t, m)
}

// The runner's own path: transport.Command in its own group, Close (stdin
// closed, SIGTERM, SIGKILL to the group) leaves nothing behind.
func TestTransportCloseKillsSandbox(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	m := marker()
	sc, err := f.policy().Wrap("/bin/sh", []string{"-c", "trap '' TERM; sleep " + m + " & sleep " + m + " & wait"})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	cmd := &transport.Command{Path: sc.Path, Args: sc.Args, Env: sc.Env, ExtraFiles: sc.Files, Dir: f.ws,
		ExitGrace: 200 * time.Millisecond, TermGrace: 200 * time.Millisecond}
	conn, err := cmd.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waitProcs(t, m, "sleep", 2)
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, m)
}
