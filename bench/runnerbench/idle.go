package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/transport"
)

// fakeScript is the lightest agent that can be idle in a session: a shell
// loop that answers initialize and nothing else (about 1 MB per process,
// so a thousand of them fit).
const fakeScript = `#!/bin/sh
while IFS= read -r l; do
  case "$l" in
    *'"subtype":"initialize"'*)
      id=${l#*\"request_id\":\"}; id=${id%%\"*}
      printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "$id";;
  esac
done
`

// writeHeapProfile writes the heap profile to path, and the goroutines
// (grouped by stack) with the memory statistics to path+".txt".
func writeHeapProfile(path string) error {
	runtime.GC()
	err := writeProfile(path, "heap", 0)
	if err == nil {
		err = writeProfile(path+".txt", "goroutine", 1)
	}
	if err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f, err := os.OpenFile(path+".txt", os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "\nHeapInuse %d\nHeapAlloc %d\nStackInuse %d\nMSpanInuse %d\nMCacheInuse %d\nGCSys %d\nOtherSys %d\nSys %d\nGoroutines %d\n",
		ms.HeapInuse, ms.HeapAlloc, ms.StackInuse, ms.MSpanInuse, ms.MCacheInuse, ms.GCSys, ms.OtherSys, ms.Sys, runtime.NumGoroutine())
	return errors.Join(err, f.Close())
}

func writeProfile(path, name string, debug int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = pprof.Lookup(name).WriteTo(f, debug)
	return errors.Join(err, f.Close())
}

type idleResult struct {
	sessions      int
	perSessionKiB float64
	readyMedian   time.Duration
	agentStart    time.Duration
	threads       int64 // the runner's OS threads with the sessions idle
}

// idle opens n sessions on a runner in a child process and reads its RSS.
// With memprofile set, the child records every allocation and writes a
// heap profile there once the sessions are idle (its RSS is then larger).
func idle(self string, n int, memprofile string, heapFloor int64) (idleResult, error) {
	dir, err := os.MkdirTemp("", "runnerbench-idle-")
	if err != nil {
		return idleResult{}, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte(fakeScript), 0o755); err != nil {
		return idleResult{}, err
	}
	var extra []string
	if memprofile != "" {
		// RSS is then off: this run is for the profile.
		extra = append(extra, "-exact-profile")
	}
	ch, err := startChild(self, script, nil, heapFloor, extra...)
	if err != nil {
		return idleResult{}, err
	}
	defer ch.close()
	url, pid := ch.url, ch.cmd.Process.Pid
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Warm up one session so one-time costs are not charged per session.
	warm, _, err := openSeed(ctx, url, "warm", "")
	if err != nil {
		return idleResult{}, err
	}
	defer warm.CloseNow()
	time.Sleep(time.Second)
	before := rssKiB(pid)
	var conns []*websocket.Conn
	var readers sync.WaitGroup
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
		readers.Wait()
	}()
	var readies []time.Duration
	for i := range n {
		start := time.Now()
		ws, _, err := openSeed(ctx, url, "idle"+strconv.Itoa(i), "")
		if err != nil {
			return idleResult{}, fmt.Errorf("session %d: %w", i, err)
		}
		readies = append(readies, time.Since(start))
		conns = append(conns, ws)
		// A connected host keeps reading (and so answers the runner's
		// pings): every session stays attached for the whole measure.
		readers.Go(func() { drain(ctx, ws) })
	}
	time.Sleep(2 * time.Second)
	after := rssKiB(pid)
	threads := procStatus(pid, "Threads:")
	if memprofile != "" {
		if err := profileChild(ch.stdin, ch.out, memprofile); err != nil {
			return idleResult{}, err
		}
	}
	own, err := agentStart(script, 50)
	if err != nil {
		return idleResult{}, err
	}
	slices.Sort(readies)
	return idleResult{
		sessions: n, perSessionKiB: float64(after-before) / float64(n),
		readyMedian: readies[len(readies)/2], agentStart: own, threads: threads,
	}, nil
}

// drain reads a connection until it ends, as an idle host does.
func drain(ctx context.Context, ws *websocket.Conn) {
	for {
		if _, _, err := ws.Read(ctx); err != nil {
			return
		}
	}
}

// agentStart is the agent's own start: spawn it and complete initialize,
// as the runner does, without a runner (median of reps).
func agentStart(script string, reps int) (time.Duration, error) {
	args, err := (&claude.Options{}).CommandArgs()
	if err != nil {
		return 0, err
	}
	var ds []time.Duration
	for range reps {
		start := time.Now()
		c, err := claude.Connect(context.Background(), claude.Options{Transport: &transport.Command{Path: script, Args: args}})
		if err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(start))
		_ = c.Close()
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

// profileChild asks the serve child for a heap profile and waits for it.
func profileChild(stdin io.Writer, stdout *bufio.Reader, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(stdin, abs); err != nil {
		return err
	}
	line, err := stdout.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "PROFILED" {
		return fmt.Errorf("heap profile of the runner: %q, %v", line, err)
	}
	return nil
}

func rssKiB(pid int) int64 { return procStatus(pid, "VmRSS:") }

// procStatus reads one numeric field of /proc/PID/status (0 if absent).
func procStatus(pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
