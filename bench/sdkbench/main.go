// Command sdkbench measures Tether's claude SDK against the fake Claude Code
// CLI of the shared peer harness (shared/bench/peer-sdk), and runs that
// harness's TypeScript SDK consumer (consume.mjs) and its floors (floor.mjs)
// in the same run, so the numbers can be quoted as ratios.
//
//	go run ./bench/sdkbench                    # full matrix, 3 reps, markdown on stdout
//	go run ./bench/sdkbench -reps 1 -robust=false
//	go run ./bench/sdkbench -big               # also the 200 MB line probes
//	go run ./bench/sdkbench consume -n 100000 -size 100 -cpuprofile cpu.prof
//	go run ./bench/sdkbench cpu -tether /tmp/tether   # CPU per message, the fake taken out
//
// The parent copies the harness to <module>/.cache/peer-sdk (npm-installing
// the pinned SDK there the first time) and runs every measurement as its own
// process, so each peak RSS belongs to one consumer. The consume subcommand is
// the Go consumer: one claude.Query against the fake, one JSON line out.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "consume" {
		os.Exit(consumeMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "tetherrun" {
		os.Exit(tetherRunMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "cpu" {
		os.Exit(cpuMain(os.Args[2:]))
	}
	os.Exit(runMain(os.Args[1:]))
}

type runFlags struct {
	reps      int
	perf      bool
	robust    bool
	robustTS  bool
	big       bool
	only      string
	peer      string
	md        string
	timeout   time.Duration
	floorsAll bool
	goFloors  bool
	altBin    string
	altLabel  string
	from      string
	tether    string
}

func runMain(args []string) int {
	var f runFlags
	fs := flag.NewFlagSet("sdkbench", flag.ExitOnError)
	fs.IntVar(&f.reps, "reps", 3, "repetitions of each perf case (the table shows medians)")
	fs.BoolVar(&f.perf, "perf", true, "run the throughput/memory cases")
	fs.BoolVar(&f.robust, "robust", true, "run the robustness probes (once each)")
	fs.BoolVar(&f.robustTS, "robust-ts", true, "also run the robustness probes through the TS SDK")
	fs.BoolVar(&f.big, "big", false, "also probe a 200 MB line (Go with the default and a raised MaxLineSize, and TS)")
	fs.StringVar(&f.only, "only", "", "run only cases whose label contains this substring")
	fs.StringVar(&f.peer, "peer", "", "writable copy of the peer harness (default <module>/.cache/peer-sdk)")
	fs.StringVar(&f.md, "md", "", "also write the markdown tables to this file")
	fs.DurationVar(&f.timeout, "kill-after", 90*time.Second, "kill any single measurement process after this long")
	fs.BoolVar(&f.goFloors, "go-floors", true, "also run the Go floors (ndjson.Reader alone; ndjson + claudecode.Parse) in the consume binary")
	fs.StringVar(&f.altBin, "alt-bin", "", "A/B: another sdkbench binary (e.g. built against a patched SDK) run as an extra Go row in every perf case")
	fs.StringVar(&f.altLabel, "alt-label", "alt build", "how the -alt-bin row is described")
	fs.StringVar(&f.tether, "tether", "", "also time `tether run --json` (this tether binary) in the N=100000,SIZE=100 case")
	fs.StringVar(&f.from, "from", "", "run nothing: print the tables of an earlier run's JSONL file")
	fs.BoolVar(&f.floorsAll, "all-floors", true, "also run the fake | cat floor (devnull, split and readline always run)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sdkbench [flags]\n       sdkbench consume [flags]   (one Go consumer run; see sdkbench consume -h)\n\n")
		fs.PrintDefaults()
	}
	_ = fs.Parse(args)
	if f.reps < 1 {
		f.reps = 1
	}
	if err := run(f); err != nil {
		fmt.Fprintln(os.Stderr, "sdkbench:", err)
		return 1
	}
	return 0
}
