package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tetherhq/tether/claude"
)

// backlogLine is the size of each line the agent writes in the backlog
// case, its JSON framing included (the text is this less ~160 bytes).
const backlogLine = 1000

// backlogResult is the runner's anonymous memory while a host that reads
// nothing lets its agent's output pile up.
type backlogResult struct {
	bytes         int64 // what the agent wrote
	baseKiB       int64 // RssAnon before the turn
	peakKiB       int64 // its peak until the host has read everything
	pausePeakKiB  int64 // its peak while the host read nothing
	delivered     int   // messages the host received in the end
	undelivered   bool  // the turn did not reach the host whole
	hostPause     time.Duration
	drainDuration time.Duration
}

// backlogs runs the backlog case for each size, each in a fresh runner.
func backlogs(self string, sizes []int64, pause time.Duration, heapFloor int64) ([]backlogResult, error) {
	var out []backlogResult
	for _, size := range sizes {
		r, err := backlog(self, size, pause, heapFloor)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// backlog starts a runner, opens a protocol v1 session through the SDK and
// prompts its agent to write size bytes of 1,000-byte lines at once; the
// host reads nothing for pause, then everything. It samples the runner's
// RssAnon (heap and stacks, not the log's page cache) meanwhile.
func backlog(self string, size int64, pause time.Duration, heapFloor int64) (backlogResult, error) {
	n := int(size / backlogLine)
	rc, err := startChild(self, self, agentEnv(n, backlogLine-160, 0), heapFloor)
	if err != nil {
		return backlogResult{}, err
	}
	defer rc.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := claude.Connect(ctx, claude.Options{Runner: &claude.RunnerOptions{URL: rc.url, WorkspaceID: "backlog"}})
	if err != nil {
		return backlogResult{}, err
	}
	defer c.Close()
	res := backlogResult{bytes: int64(n) * backlogLine, hostPause: pause, baseKiB: rssAnonKiB(rc.cmd.Process.Pid)}
	var peak atomic.Int64
	stop := sampleRSS(rc.cmd.Process.Pid, &peak)
	if err := c.Query(ctx, "go"); err != nil {
		stop()
		res.peakKiB = peak.Load()
		return res, err
	}
	time.Sleep(pause) // the host reads nothing
	res.pausePeakKiB = peak.Load()
	began := time.Now()
	for msg, err := range c.Receive(ctx) {
		if err != nil {
			stop()
			res.peakKiB = peak.Load()
			return res, err
		}
		if _, ok := msg.(*claude.AssistantMessage); ok {
			res.delivered++
		}
	}
	res.drainDuration = time.Since(began)
	stop()
	res.peakKiB = peak.Load()
	res.undelivered = res.delivered != n
	return res, nil
}

// sampleRSS records the peak RssAnon of pid in peak every 20 ms until
// stop is called; stop returns once the sampler has ended.
func sampleRSS(pid int, peak *atomic.Int64) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := rssAnonKiB(pid); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-ended }
}

// rssAnonKiB is a process's anonymous resident memory, from /proc.
func rssAnonKiB(pid int) int64 { return procStatus(pid, "RssAnon:") }
