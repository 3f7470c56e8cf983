package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// cpuConsumer is one process cpuMain measures: a consumer of the fake, or
// the floor (the fake writing to /dev/null through the harness).
type cpuConsumer struct {
	name string
	argv []string
	env  []string
	dir  string
	cpu  []time.Duration // user + system of the process and what it reaped
	wall []time.Duration
}

// cpuMain measures CPU per message, the measure that holds when the fake
// is the bottleneck and throughput cannot tell the consumers apart: each
// consumer's process tree (user + system from wait4: the consumer and the
// fake it spawned and reaped), less the floor's, over runs that alternate
// the consumers.
func cpuMain(args []string) int {
	fs := flag.NewFlagSet("sdkbench cpu", flag.ExitOnError)
	tether := fs.String("tether", "", "also measure `tether run --json` with this tether binary")
	n := fs.Int("n", 100000, "FAKE_N")
	size := fs.Int("size", 100, "FAKE_SIZE")
	reps := fs.Int("reps", 7, "runs of each consumer, alternating (the table shows medians)")
	_ = fs.Parse(args)
	consumers, err := cpuConsumers(*tether, *n, *size)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdkbench cpu:", err)
		return 1
	}
	for range max(*reps, 1) {
		for _, c := range consumers {
			if err := c.run(); err != nil {
				fmt.Fprintf(os.Stderr, "sdkbench cpu: %s: %v\n", c.name, err)
				return 1
			}
		}
	}
	writeCPU(consumers, *n)
	return 0
}

func cpuConsumers(tether string, n, size int) ([]*cpuConsumer, error) {
	peer, err := peerDir("")
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(peer, "node_modules")); err != nil {
		return nil, fmt.Errorf("the TS SDK is not installed in %s: run sdkbench once first", peer)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	fake := filepath.Join(peer, "fake-cli")
	nodeFake := []string{"--mode", "normal", "--n", strconv.Itoa(n), "--size", strconv.Itoa(size)}
	out := []*cpuConsumer{
		{name: "fake → /dev/null (floor)", argv: concat([]string{"node", "floor.mjs", "--sink", "devnull"}, nodeFake), dir: peer},
		{name: "TS SDK query()", argv: concat([]string{"node", "consume.mjs", "--launch", "wrapper"}, nodeFake), dir: peer},
		{name: "Go claude.Query", argv: concat([]string{self, "consume", "-cli", fake}, goFake("normal", n, size)), dir: peer},
	}
	if tether != "" {
		out = append(out, &cpuConsumer{name: "tether run --json", dir: os.TempDir(),
			argv: []string{tether, "run", "--cli", fake, "--json", "--approve=allow", "bench"},
			env:  []string{"FAKE_MODE=normal", "FAKE_N=" + strconv.Itoa(n), "FAKE_SIZE=" + strconv.Itoa(size)}})
	}
	return out, nil
}

// run runs the consumer once, output to /dev/null, and records its costs.
func (c *cpuConsumer) run() error {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer devnull.Close()
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Dir, cmd.Env = c.dir, append(os.Environ(), c.env...)
	stderr := &tail{n: 4 << 10}
	cmd.Stdout, cmd.Stderr = devnull, stderr
	began := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s", err, stderr)
	}
	c.wall = append(c.wall, time.Since(began))
	c.cpu = append(c.cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	return nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(d))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func writeCPU(consumers []*cpuConsumer, n int) {
	floor := median(consumers[0].cpu)
	perMsg := func(c *cpuConsumer) float64 {
		return float64((median(c.cpu) - floor).Nanoseconds()) / 1000 / float64(n)
	}
	ts := perMsg(consumers[1])
	fmt.Printf("CPU per message beyond the fake (%d messages, medians of %d runs)\n\n", n, len(consumers[0].cpu))
	fmt.Println("| consumer | process tree CPU ms | CPU per message beyond the floor | TS SDK's ÷ this | whole process ms |")
	fmt.Println("|---|---:|---:|---:|---:|")
	for i, c := range consumers {
		beyond, ratio := "–", "–"
		if i > 0 {
			beyond = fmt.Sprintf("%.2f µs", perMsg(c))
		}
		if i > 1 {
			ratio = fmt.Sprintf("%.2f×", ts/perMsg(c))
		}
		fmt.Printf("| %s | %d | %s | %s | %d |\n", c.name, median(c.cpu).Milliseconds(), beyond, ratio, median(c.wall).Milliseconds())
	}
}
