package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

func run(cfg config) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fake := fakeCLI(cfg.fakeCLI)
	fmt.Printf("runnerbench: %s, %d CPUs; agents: a Go stream-json stub (this binary)%s; sandbox off\n\n",
		runtime.Version(), runtime.NumCPU(), fakeNote(fake, cfg.fakeCLI))

	switch cfg.only {
	case "":
	case "throughput":
		tps, err := throughputs(self, fake, cfg)
		for _, tp := range tps {
			fmt.Printf("throughput, %s: local %.0f msgs/s, runner %.0f msgs/s, ratio %.2f\n", tp.agent, tp.local, tp.remote, tp.remote/tp.local)
			printCPU(tp)
		}
		return err
	case "latency":
		lat, rlat, err := latency(self, cfg.latencyN)
		fmt.Printf("latency: p50 local %s, runner %s (+%s); p99 local %s, runner %s (+%s)\n",
			us(lat[0]), us(rlat[0]), us(rlat[0]-lat[0]), us(lat[1]), us(rlat[1]), us(rlat[1]-lat[1]))
		return err
	case "replay":
		frames, rates, err := replays(self, cfg.replay)
		fmt.Printf("replay: %d frames, seed-only client decoding each %.0f frames/s, passing them on %.0f frames/s, SDK host (batches) %.0f frames/s\n",
			frames, rates[seedDecoding], rates[seedPassing], rates[sdkHost])
		return err
	case "backlog":
		rs, err := backlogs(self, []int64{55_000_000, 220_000_000}, 10*time.Second, cfg.heapFloor)
		printBacklogs(rs)
		return err
	case "idle":
		idl, err := idle(self, cfg.sessions, cfg.memprofile, cfg.heapFloor)
		fmt.Printf("idle: %d sessions, %.1f KiB per session, %d runner threads; init → ready median %s vs the agent's own start %s (+%s)\n",
			idl.sessions, idl.perSessionKiB, idl.threads, ms(idl.readyMedian), ms(idl.agentStart), ms(idl.readyMedian-idl.agentStart))
		return err
	default:
		return fmt.Errorf("unknown case %q (want throughput, latency, replay, idle or backlog)", cfg.only)
	}
	tps, err := throughputs(self, fake, cfg)
	if err != nil {
		return err
	}
	lat, rlat, err := latency(self, cfg.latencyN)
	if err != nil {
		return err
	}
	frames, rates, err := replays(self, cfg.replay)
	if err != nil {
		return err
	}
	idl, err := idle(self, cfg.sessions, cfg.memprofile, cfg.heapFloor)
	if err != nil {
		return err
	}
	added := idl.readyMedian - idl.agentStart
	fmt.Println("| measure | local | through the runner | result | target |")
	fmt.Println("|---|---:|---:|---:|---|")
	for _, tp := range tps {
		fmt.Printf("| relay throughput, %s, %d msgs of 100 B text (median of %d) | %.0f msgs/s | %.0f msgs/s | %.2f× | ≥ 0.7× %s |\n",
			tp.agent, cfg.n, cfg.reps, tp.local, tp.remote, tp.remote/tp.local, verdict(tp.remote/tp.local >= 0.7))
	}
	fmt.Printf("| delivery latency p50 (%d paced msgs) | %s | %s | +%s | ≤ 200µs added %s |\n",
		cfg.latencyN, us(lat[0]), us(rlat[0]), us(rlat[0]-lat[0]), verdict(rlat[0]-lat[0] <= 200*time.Microsecond))
	fmt.Printf("| delivery latency p99 | %s | %s | +%s | — |\n", us(lat[1]), us(rlat[1]), us(rlat[1]-lat[1]))
	fmt.Printf("| runner memory per idle session (%d sessions) | — | %.1f KiB | %.1f KiB | ≤ 100 KiB %s |\n",
		idl.sessions, idl.perSessionKiB, idl.perSessionKiB, verdict(idl.perSessionKiB <= 100))
	fmt.Printf("| init → ready (median) vs the agent's own start | %s | %s | +%s | ≤ 5 ms added %s |\n",
		ms(idl.agentStart), ms(idl.readyMedian), ms(added), verdict(added <= 5*time.Millisecond))
	for _, r := range []struct {
		client replayClient
		name   string
	}{
		{seedDecoding, "a resuming seed-only client that decodes each frame"},
		{seedPassing, "a resuming seed-only client that passes frames on"},
		{sdkHost, "a resuming SDK host (batch frames)"},
	} {
		fmt.Printf("| replay of %d logged frames to %s | — | %.0f frames/s | %.0f frames/s | ≥ 200k/s %s |\n",
			frames, r.name, rates[r.client], rates[r.client], verdict(rates[r.client] >= 200_000))
	}
	fmt.Println()
	for _, tp := range tps {
		printCPU(tp)
	}
	return nil
}

// replays runs the replay case with each kind of client, and returns the
// frames replayed and each one's rate.
func replays(self string, n int) (frames int, rates [3]float64, err error) {
	for _, c := range []replayClient{seedDecoding, seedPassing, sdkHost} {
		var k int
		if k, rates[c], err = replay(self, n, c); err != nil {
			return frames, rates, err
		}
		frames = max(frames, k)
	}
	return frames, rates, nil
}

// throughputs runs the throughput case with the stub agent, then with the
// fake CLI when there is one.
func throughputs(self, fake string, cfg config) ([]tpResult, error) {
	tp, err := throughput(self, self, agentEnv(cfg.n, 100, 0), cfg.reps, cfg.heapFloor)
	if err != nil {
		return nil, fmt.Errorf("stub agent: %w", err)
	}
	tp.agent = "stub agent"
	tps := []tpResult{tp}
	if fake == "" {
		return tps, nil
	}
	tp, err = throughput(self, fake, fakeEnv(cfg.n, 100), cfg.reps, cfg.heapFloor)
	if err != nil {
		return tps, fmt.Errorf("fake CLI: %w", err)
	}
	tp.agent = "fake CLI"
	return append(tps, tp), nil
}

// fakeCLI returns path made absolute (the runner starts agents in their
// workspaces) when it names an executable file, else "".
func fakeCLI(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return ""
	}
	return abs
}

// fakeNote names the fake CLI as given (a report names no absolute path).
func fakeNote(fake, given string) string {
	if fake == "" {
		return " (no fake CLI at " + given + ": run sdkbench once to prepare it, or pass -fake-cli)"
	}
	return " and the peer harness's fake CLI (" + given + ")"
}

// printCPU prints the throughput case's CPU per message.
func printCPU(tp tpResult) {
	fmt.Printf("CPU per message, %s (median; user + system): local: SDK %s, agent %s; "+
		"through the runner: SDK %s, runner %s, agent %s\n",
		tp.agent, usf(tp.localCPU.sdk), usf(tp.localCPU.agent), usf(tp.remoteCPU.sdk), usf(tp.remoteCPU.runner), usf(tp.remoteCPU.agent))
}

func verdict(ok bool) string {
	if ok {
		return "(met)"
	}
	return "(NOT met)"
}

func us(d time.Duration) string  { return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond)) }
func usf(d time.Duration) string { return fmt.Sprintf("%.2fµs", float64(d)/float64(time.Microsecond)) }
func ms(d time.Duration) string  { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// printBacklogs prints each backlog run and the growth of the peak from
// the first to the last.
func printBacklogs(rs []backlogResult) {
	for _, r := range rs {
		fmt.Printf("backlog: %d MB written while the host read nothing for %s: runner RssAnon %.1f MiB before, peak %.1f MiB during the pause, %.1f MiB in all; %d messages delivered in %s%s\n",
			r.bytes/1_000_000, r.hostPause, float64(r.baseKiB)/1024, float64(r.pausePeakKiB)/1024, float64(r.peakKiB)/1024, r.delivered, ms(r.drainDuration),
			map[bool]string{true: " (NOT all of them)", false: ""}[r.undelivered])
	}
	if len(rs) > 1 && rs[0].peakKiB > 0 {
		first, last := rs[0], rs[len(rs)-1]
		fmt.Printf("backlog: %.0f× the backlog, %.2f× the peak (target ≤ 1.1×)\n",
			float64(last.bytes)/float64(first.bytes), float64(last.peakKiB)/float64(first.peakKiB))
	}
}
