// Command runnerbench measures what a runner adds on top of a local agent:
// relay throughput, added latency per message, memory and start time per
// idle session, and replay speed after a reconnect. It prints a table; see
// docs/benchmarks.md for a recorded run.
//
//	go run ./bench/runnerbench [-sessions 1000] [-n 100000] [-fake-cli PATH]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/tetherhq/tether/internal/gcfloor"
)

func main() {
	if os.Getenv("BENCH_AGENT") == "1" {
		os.Exit(runAgent())
	}
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		os.Exit(serveChild(os.Args[2:]))
	}
	var cfg config
	flag.IntVar(&cfg.n, "n", 100_000, "messages per turn for throughput")
	flag.IntVar(&cfg.latencyN, "latency-n", 5_000, "messages for the latency case")
	flag.IntVar(&cfg.sessions, "sessions", 1_000, "idle sessions")
	flag.IntVar(&cfg.replay, "replay", 100_000, "frames to replay")
	flag.IntVar(&cfg.reps, "reps", 3, "repetitions of the throughput case (median)")
	flag.StringVar(&cfg.fakeCLI, "fake-cli", ".cache/peer-sdk/fake-cli", "the peer harness's fake CLI (FAKE_N, FAKE_SIZE), which sdkbench prepares; the throughput case runs with it too when it exists")
	flag.Int64Var(&cfg.heapFloor, "heap-floor", gcfloor.Default, "the runner's heap floor in `BYTES` (tether serve --gc-heap-floor; 0: none)")
	flag.StringVar(&cfg.only, "only", "", "run one case: throughput, latency, replay, idle or backlog")
	flag.StringVar(&cfg.cpuprofile, "cpuprofile", "", "write a CPU profile of this process to `FILE`")
	flag.StringVar(&cfg.memprofile, "memprofile", "", "write an exact heap profile of the idle case's runner to `FILE` (its memory figure is then off)")
	flag.Parse()
	if cfg.cpuprofile != "" {
		f, err := os.Create(cfg.cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "runnerbench:", err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "runnerbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

type config struct {
	n, latencyN, sessions, replay, reps int
	only, cpuprofile, memprofile        string
	fakeCLI                             string
	heapFloor                           int64
}
