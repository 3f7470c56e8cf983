package main

import (
	"fmt"
	"os"
	"runtime"
	"time"
)

func run(cfg config) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("runnerbench: %s, %d CPUs; agent: a Go stream-json stub (this binary), sandbox off\n\n", runtime.Version(), runtime.NumCPU())

	switch cfg.only {
	case "":
	case "throughput":
		tp, err := throughput(self, cfg.n, cfg.reps)
		fmt.Printf("throughput: local %.0f msgs/s, runner %.0f msgs/s, ratio %.2f\n", tp.local, tp.remote, tp.remote/tp.local)
		printCPU(tp)
		return err
	case "latency":
		lat, rlat, err := latency(self, cfg.latencyN)
		fmt.Printf("latency: p50 local %s, runner %s (+%s); p99 local %s, runner %s (+%s)\n",
			us(lat[0]), us(rlat[0]), us(rlat[0]-lat[0]), us(lat[1]), us(rlat[1]), us(rlat[1]-lat[1]))
		return err
	case "replay":
		frames, perSec, err := replay(self, cfg.replay, false)
		if err != nil {
			return err
		}
		_, relayPerSec, err := replay(self, cfg.replay, true)
		fmt.Printf("replay: %d frames, seed-only client %.0f frames/s, SDK host (batches) %.0f frames/s\n", frames, perSec, relayPerSec)
		return err
	case "idle":
		idl, err := idle(self, cfg.sessions, cfg.memprofile)
		fmt.Printf("idle: %d sessions, %.1f KiB per session, %d runner threads; init → ready median %s vs the agent's own start %s (+%s)\n",
			idl.sessions, idl.perSessionKiB, idl.threads, ms(idl.readyMedian), ms(idl.agentStart), ms(idl.readyMedian-idl.agentStart))
		return err
	default:
		return fmt.Errorf("unknown case %q (want throughput, latency, replay or idle)", cfg.only)
	}
	tp, err := throughput(self, cfg.n, cfg.reps)
	if err != nil {
		return err
	}
	local, remote := tp.local, tp.remote
	lat, rlat, err := latency(self, cfg.latencyN)
	if err != nil {
		return err
	}
	frames, perSec, err := replay(self, cfg.replay, false)
	if err != nil {
		return err
	}
	relayFrames, relayPerSec, err := replay(self, cfg.replay, true)
	if err != nil {
		return err
	}
	idl, err := idle(self, cfg.sessions, cfg.memprofile)
	if err != nil {
		return err
	}
	added := idl.readyMedian - idl.agentStart
	fmt.Println("| measure | local | through the runner | result | target |")
	fmt.Println("|---|---:|---:|---:|---|")
	fmt.Printf("| relay throughput, %d msgs of 100 B (median of %d) | %.0f msgs/s | %.0f msgs/s | %.2f× | ≥ 0.7× %s |\n",
		cfg.n, cfg.reps, local, remote, remote/local, verdict(remote/local >= 0.7))
	fmt.Printf("| delivery latency p50 (%d paced msgs) | %s | %s | +%s | ≤ 200µs added %s |\n",
		cfg.latencyN, us(lat[0]), us(rlat[0]), us(rlat[0]-lat[0]), verdict(rlat[0]-lat[0] <= 200*time.Microsecond))
	fmt.Printf("| delivery latency p99 | %s | %s | +%s | — |\n", us(lat[1]), us(rlat[1]), us(rlat[1]-lat[1]))
	fmt.Printf("| runner memory per idle session (%d sessions) | — | %.1f KiB | %.1f KiB | ≤ 100 KiB %s |\n",
		idl.sessions, idl.perSessionKiB, idl.perSessionKiB, verdict(idl.perSessionKiB <= 100))
	fmt.Printf("| init → ready (median) vs the agent's own start | %s | %s | +%s | ≤ 5 ms added %s |\n",
		ms(idl.agentStart), ms(idl.readyMedian), ms(added), verdict(added <= 5*time.Millisecond))
	fmt.Printf("| replay of %d logged frames to a resuming client | — | %.0f frames/s | %.0f frames/s | ≥ 200k/s %s |\n",
		frames, perSec, perSec, verdict(perSec >= 200_000))
	fmt.Printf("| replay of %d logged frames to a resuming SDK host (batch frames) | — | %.0f frames/s | %.0f frames/s | ≥ 200k/s %s |\n",
		relayFrames, relayPerSec, relayPerSec, verdict(relayPerSec >= 200_000))
	fmt.Println()
	printCPU(tp)
	return nil
}

// printCPU prints the throughput case's CPU per message.
func printCPU(tp tpResult) {
	fmt.Printf("CPU per message (median; user + system): local: this process (SDK) %s, agent %s; "+
		"through the runner: this process (runner + SDK) %s, agent %s\n",
		usf(tp.localCPU.self), usf(tp.localCPU.children), usf(tp.remoteCPU.self), usf(tp.remoteCPU.children))
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
