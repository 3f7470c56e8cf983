package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/coder/websocket"
	segjson "github.com/segmentio/encoding/json"

	"github.com/tetherhq/tether/claude"
	v1 "github.com/tetherhq/tether/protocol/runnerv1"
)

// query runs one turn and returns messages seen and time to the result;
// onMsg sees each message as it arrives.
func query(opts claude.Options, onMsg func(claude.Message)) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	n := 0
	for msg, err := range claude.Query(ctx, "go", opts) {
		if err != nil {
			return n, 0, err
		}
		n++
		if onMsg != nil {
			onMsg(msg)
		}
		if _, ok := msg.(*claude.ResultMessage); ok {
			return n, time.Since(start), nil
		}
	}
	return n, 0, fmt.Errorf("no result after %d messages", n)
}

func agentEnv(n, size, paceUS int) map[string]string {
	return map[string]string{"BENCH_AGENT": "1", "BENCH_N": strconv.Itoa(n),
		"BENCH_SIZE": strconv.Itoa(size), "BENCH_PACE_US": strconv.Itoa(paceUS), "GOGC": "400"}
}

// cpuUse is CPU time (user + system) per message: of this process (the
// SDK: the host's, through the runner), of the runner's process (0
// locally), and of the agent (reaped by the SDK locally, by the runner
// through it).
type cpuUse struct{ sdk, runner, agent time.Duration }

// selfCPU returns the CPU time of this process and of its reaped
// children, read with getrusage.
func selfCPU() (own, reaped time.Duration) {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return rusageCPU(self), rusageCPU(children)
}

func rusageCPU(ru syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tpResult is the throughput case's result: msgs/s and CPU per message,
// each the median of the reps.
type tpResult struct {
	agent               string
	local, remote       float64
	localCPU, remoteCPU cpuUse
}

// timedQuery runs query and returns msgs/s and CPU per message; rc is the
// runner's process when the query goes through one. The agent is reaped
// when the query returns (locally by the SDK, through the runner by the
// session's end, which the host's close waits for), so its CPU counts.
func timedQuery(opts claude.Options, rc *child) (float64, cpuUse, error) {
	sdk0, agent0 := selfCPU()
	var runner0 time.Duration
	if rc != nil {
		runner0, agent0 = rc.cpu()
	}
	n, d, err := query(opts, nil)
	if err != nil {
		return 0, cpuUse{}, err
	}
	sdk1, agent1 := selfCPU()
	var runner1 time.Duration
	if rc != nil {
		// The runner reaps the agent a moment after the host's close.
		time.Sleep(100 * time.Millisecond)
		runner1, agent1 = rc.cpu()
	}
	per := func(d time.Duration) time.Duration { return d / time.Duration(n) }
	return float64(n) / d.Seconds(), cpuUse{sdk: per(sdk1 - sdk0), runner: per(runner1 - runner0), agent: per(agent1 - agent0)}, nil
}

// fakeEnv is the environment of the peer harness's fake CLI for a turn of
// n assistant messages of size text bytes.
func fakeEnv(n, size int) map[string]string {
	return map[string]string{"FAKE_N": strconv.Itoa(n), "FAKE_SIZE": strconv.Itoa(size)}
}

// throughput returns msgs/s and CPU per message locally and through a
// runner in its own process, each the median of reps runs, with the agent
// cli in env.
func throughput(self, cli string, env map[string]string, reps int, heapFloor int64) (tpResult, error) {
	var extra []string
	if prof := os.Getenv("RUNNERBENCH_RUNNER_CPUPROFILE"); prof != "" {
		extra = append(extra, "-cpuprofile", prof)
	}
	if prof := os.Getenv("RUNNERBENCH_RUNNER_ALLOCPROFILE"); prof != "" {
		extra = append(extra, "-allocprofile", prof)
	}
	rc, err := startChild(self, cli, env, heapFloor, extra...)
	if err != nil {
		return tpResult{}, err
	}
	defer rc.close()
	var ls, rs []float64
	var lc, rcpu []cpuUse
	for i := range reps {
		rate, cpu, err := timedQuery(claude.Options{CLIPath: cli, Env: env}, nil)
		if err != nil {
			return tpResult{}, fmt.Errorf("local: %w", err)
		}
		ls, lc = append(ls, rate), append(lc, cpu)
		rate, cpu, err = timedQuery(claude.Options{Runner: &claude.RunnerOptions{URL: rc.url, WorkspaceID: fmt.Sprintf("tp%d", i)}}, rc)
		if err != nil {
			return tpResult{}, fmt.Errorf("runner: %w", err)
		}
		rs, rcpu = append(rs, rate), append(rcpu, cpu)
	}
	return tpResult{local: median(ls), remote: median(rs), localCPU: medianCPU(lc), remoteCPU: medianCPU(rcpu)}, nil
}

// medianCPU is the median of each part on its own.
func medianCPU(cs []cpuUse) cpuUse {
	var sdk, runner, agent []float64
	for _, c := range cs {
		sdk, runner, agent = append(sdk, float64(c.sdk)), append(runner, float64(c.runner)), append(agent, float64(c.agent))
	}
	return cpuUse{sdk: time.Duration(median(sdk)), runner: time.Duration(median(runner)), agent: time.Duration(median(agent))}
}

// latency returns per-message delivery delays (p50, p99) locally and
// through a runner; messages are paced so nothing queues.
func latency(self string, n int) (local, remote [2]time.Duration, err error) {
	env := agentEnv(n, 100, 200)
	ip, err := startInproc(self, env)
	if err != nil {
		return local, remote, err
	}
	defer ip.close()
	measure := func(opts claude.Options) ([2]time.Duration, error) {
		var delays []time.Duration
		_, _, err := query(opts, func(m claude.Message) {
			if ts := stamp(m.Raw()); ts > 0 {
				delays = append(delays, time.Duration(time.Now().UnixNano()-ts))
			}
		})
		slices.Sort(delays)
		if err != nil || len(delays) == 0 {
			return [2]time.Duration{}, fmt.Errorf("latency: %v (%d samples)", err, len(delays))
		}
		return [2]time.Duration{delays[len(delays)/2], delays[len(delays)*99/100]}, nil
	}
	if local, err = measure(claude.Options{CLIPath: self, Env: env}); err != nil {
		return
	}
	remote, err = measure(claude.Options{Runner: &claude.RunnerOptions{URL: ip.url, WorkspaceID: "latency"}})
	return
}

// stamp finds the agent's "ts" in a raw line.
func stamp(raw []byte) int64 {
	i := bytes.Index(raw, []byte(`"ts":`))
	if i < 0 {
		return 0
	}
	j := i + 5
	for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
		j++
	}
	ts, _ := strconv.ParseInt(string(raw[i+5:j]), 10, 64)
	return ts
}

// replayClient is how the replay case's client reads what it receives.
type replayClient int

const (
	seedDecoding replayClient = iota // seed frames, each decoded whole (countSeed)
	seedPassing                      // seed frames, only their seq read (countSeedSeq)
	sdkHost                          // batch frames, split as the SDK does (countRelay)
)

// replay logs n frames in a session nobody reads, then times a resuming
// client receiving all of them: a seed-only client (one frame per
// WebSocket message) that decodes each frame or only reads its seq, or a
// host-control client that asks for batch frames and reads them as the
// SDK does.
func replay(self string, n int, client replayClient) (frames int, perSec float64, err error) {
	relay := client == sdkHost
	ip, err := startInproc(self, agentEnv(n, 100, 0))
	if err != nil {
		return 0, 0, err
	}
	defer ip.close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ws, id, err := openSession(ctx, ip.url, "replay", "", relay)
	if err != nil {
		return 0, 0, err
	}
	write(ctx, ws, map[string]any{"type": "query", "request_id": "q", "prompt": "go"})
	ws.CloseNow()
	last, err := waitLogged(ip, id, uint64(n))
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	ws, _, err = openSession(ctx, ip.url, "replay", id, relay)
	if err != nil {
		return 0, 0, err
	}
	defer ws.CloseNow()
	// Reads take a context that never ends, as a client that streams
	// does (a read with one that can end arms a timer every message):
	// the deadline closes the connection instead.
	defer context.AfterFunc(ctx, func() { ws.CloseNow() })()
	rctx := context.WithoutCancel(ctx)
	count := map[replayClient]func([]byte) (int, uint64, error){
		seedDecoding: countSeed, seedPassing: countSeedSeq, sdkHost: countRelay,
	}[client]
	var buf []byte
	for {
		if buf, err = readMessage(rctx, ws, buf[:0]); err != nil {
			return frames, 0, err
		}
		k, seq, err := count(buf)
		if err != nil {
			return frames, 0, err
		}
		frames += k
		if seq >= last {
			return frames, float64(frames) / time.Since(start).Seconds(), nil
		}
	}
}

// readMessage reads a WebSocket message into buf, which the next read
// reuses, as a client that keeps up with a stream does.
func readMessage(ctx context.Context, ws *websocket.Conn, buf []byte) ([]byte, error) {
	_, r, err := ws.Reader(ctx)
	if err != nil {
		return buf, err
	}
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(cap(buf), 512))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// seedFrame is what a seed-only client takes from each frame: all of a
// message frame's fields, the payload (the agent's line) unescaped into
// a string of its own.
type seedFrame struct {
	Type      string `json:"type"`
	Seq       uint64 `json:"seq"`
	RequestID string `json:"request_id"`
	Payload   string `json:"payload"`
}

// countSeed decodes a frame as a seed-only client does: the whole frame,
// with a fast general decoder (segmentio/encoding/json, which the SDK
// uses for the same work), not a scan for its seq. It returns one frame
// and its seq.
func countSeed(data []byte) (int, uint64, error) {
	var f seedFrame
	if err := segjson.Unmarshal(data, &f); err != nil {
		return 0, 0, fmt.Errorf("seed client: %w: %.80s", err, data)
	}
	if f.Type == "message" && f.Payload == "" {
		return 0, 0, fmt.Errorf("seed client: a message frame without a payload: %.80s", data)
	}
	return 1, f.Seq, nil
}

// countSeedSeq reads only a frame's seq, as a seed-only client that
// passes frames on (to a queue, a browser) does: what the runner's replay
// costs on its side, without the client's decoding.
func countSeedSeq(data []byte) (int, uint64, error) {
	i := bytes.Index(data, []byte(`"seq":`))
	if i < 0 {
		return 0, 0, fmt.Errorf("seed client: a frame without a seq: %.80s", data)
	}
	var seq uint64
	for _, c := range data[i+len(`"seq":`):] {
		if c < '0' || c > '9' {
			break
		}
		seq = seq*10 + uint64(c-'0')
	}
	return 1, seq, nil
}

// countRelay reads a message as the SDK's transport does, with the
// protocol's fast paths: it returns how many frames it carries and the
// last one's seq.
func countRelay(data []byte) (int, uint64, error) {
	if seq, _, _, ok := v1.DecodeRawMessage(data); ok {
		return 1, seq, nil
	}
	if seq, items, ok := v1.SplitBatch(data, nil); ok {
		return len(items), seq + uint64(len(items)) - 1, nil
	}
	f, err := v1.Decode(data)
	if err != nil {
		return 0, 0, err
	}
	if b, ok := f.(v1.Batch); ok {
		return len(b.Frames), b.Seq + uint64(len(b.Frames)) - 1, nil
	}
	return 1, v1.FrameSeq(f), nil
}

// waitLogged waits until the session's log stops growing past min frames.
func waitLogged(ip *inproc, id string, min uint64) (uint64, error) {
	deadline := time.Now().Add(3 * time.Minute)
	var prev uint64
	for time.Now().Before(deadline) {
		last, _ := ip.log.Last(id)
		if last > min && last == prev {
			return last, nil
		}
		prev = last
		time.Sleep(200 * time.Millisecond)
	}
	return 0, fmt.Errorf("session %s logged only %d frames", id, prev)
}

// openSeed opens (or resumes from seq 0) a default-mode session.
func openSeed(ctx context.Context, url, workspace, resume string) (*websocket.Conn, string, error) {
	return openSession(ctx, url, workspace, resume, false)
}

// openSession opens (or resumes from seq 0) a session; relay makes it a
// host-control session whose host reads batch frames.
func openSession(ctx context.Context, url, workspace, resume string, relay bool) (*websocket.Conn, string, error) {
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, "", err
	}
	ws.SetReadLimit(64 << 20)
	init := map[string]any{"type": "init", "protocol_version": 1, "workspace_id": workspace, "session_opts": map[string]any{}}
	if resume != "" {
		init["resume"] = resume
	}
	if relay {
		init["host_control"], init["batch"] = true, true
	}
	write(ctx, ws, init)
	_, data, err := ws.Read(ctx)
	if err != nil {
		ws.CloseNow()
		return nil, "", err
	}
	var ready struct {
		Type      string `json:"type"`
		SessionID string `json:"session_id"`
		Details   string `json:"details"`
	}
	if json.Unmarshal(data, &ready) != nil || ready.Type != "ready" {
		ws.CloseNow()
		return nil, "", fmt.Errorf("no ready: %s", data)
	}
	return ws, ready.SessionID, nil
}

func write(ctx context.Context, ws *websocket.Conn, v any) {
	b, _ := json.Marshal(v)
	if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
		fmt.Fprintln(os.Stderr, "runnerbench: write:", err)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
