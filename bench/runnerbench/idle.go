package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// serveChild runs a runner in its own process, so its memory can be read
// from outside: `runnerbench serve -cli SCRIPT`. It prints the address,
// then serves until stdin closes.
func serveChild(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	cli := fs.String("cli", "", "agent executable")
	_ = fs.Parse(args)
	ip, err := startInproc(*cli, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ip.close()
	fmt.Println("LISTENING", ip.url)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

type idleResult struct {
	sessions      int
	perSessionKiB float64
	readyMedian   time.Duration
	agentStart    time.Duration
}

// idle opens n sessions on a runner in a child process and reads its RSS.
func idle(self string, n int) (idleResult, error) {
	dir, err := os.MkdirTemp("", "runnerbench-idle-")
	if err != nil {
		return idleResult{}, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte(fakeScript), 0o755); err != nil {
		return idleResult{}, err
	}
	cmd := exec.Command(self, "serve", "-cli", script)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return idleResult{}, err
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return idleResult{}, err
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "LISTENING "))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Warm up one session so one-time costs are not charged per session.
	warm, _, err := openSeed(ctx, url, "warm", "")
	if err != nil {
		return idleResult{}, err
	}
	defer warm.CloseNow()
	time.Sleep(time.Second)
	before := rssKiB(cmd.Process.Pid)
	var conns []*websocket.Conn
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
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
	}
	time.Sleep(2 * time.Second)
	after := rssKiB(cmd.Process.Pid)
	own, err := agentStart(script, 50)
	if err != nil {
		return idleResult{}, err
	}
	slices.Sort(readies)
	return idleResult{
		sessions: n, perSessionKiB: float64(after-before) / float64(n),
		readyMedian: readies[len(readies)/2], agentStart: own,
	}, nil
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

func rssKiB(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
