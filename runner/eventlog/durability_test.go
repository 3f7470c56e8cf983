package eventlog

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The crash tests re-execute the test binary as a child that appends,
// syncs, reports on stdout what it synced, and dies without Close: by
// os.Exit ("exit") or by the parent's SIGKILL in the middle of its
// appends ("kill").
const (
	childModeEnv = "EVENTLOG_TEST_CHILD_MODE"
	childPathEnv = "EVENTLOG_TEST_CHILD_PATH"
)

func crashChild(mode, path string) int {
	if mode == "async-meta" {
		return asyncMetaChild(path)
	}
	ctx := context.Background()
	l, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	next := uint64(1)
	appendN := func(n int) error {
		for range n {
			if _, err := l.Append(ctx, "s", []byte(seqPayload(next))); err != nil {
				return err
			}
			next++
		}
		return nil
	}
	switch mode {
	case "exit":
		if err := appendN(1000); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if err := l.Sync(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println("synced", next-1)
		if err := appendN(500); err != nil { // maybe committed, maybe not
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0 // os.Exit without Close
	case "kill":
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if err := appendN(100); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			if err := l.Sync(ctx); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			fmt.Println("synced", next-1)
			if err := appendN(37); err != nil { // in flight when killed
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
		return 3
	}
	return 2
}

func TestCrashKeepsSyncedEvents(t *testing.T) {
	for _, mode := range []string{"exit", "kill"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childModeEnv+"="+mode, childPathEnv+"="+path)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var synced uint64
			lines := bufio.NewScanner(out)
			for lines.Scan() {
				n, err := strconv.ParseUint(strings.TrimPrefix(lines.Text(), "synced "), 10, 64)
				if err != nil {
					t.Fatalf("child said %q", lines.Text())
				}
				synced = n
				if mode == "kill" && synced >= 3000 {
					if err := cmd.Process.Kill(); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
			go func() { // let the killed child's pipe drain
				for lines.Scan() {
				}
			}()
			err = cmd.Wait()
			if mode == "exit" && err != nil {
				t.Fatalf("child: %v", err)
			}
			if synced == 0 {
				t.Fatal("child synced nothing")
			}

			l := reopen(t, path, Options{})
			last, err := l.Last("s")
			if err != nil {
				t.Fatal(err)
			}
			if last < synced {
				t.Fatalf("after the crash Last = %d, but %d were synced", last, synced)
			}
			evs, err := readAll(l, "s", 0)
			if err != nil {
				t.Fatal(err)
			}
			checkRange(t, evs, 1, last, seqPayload)
			if seq := mustAppend(t, l, "s", []byte(seqPayload(last+1))); seq != last+1 {
				t.Fatalf("seq after the crash = %d, want %d", seq, last+1)
			}
			t.Logf("synced %d, found %d after reopen", synced, last)
		})
	}
}
