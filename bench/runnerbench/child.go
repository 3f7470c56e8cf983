package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/internal/gcfloor"
	"github.com/tetherhq/tether/transport"
)

// serveChild runs a runner in its own process, as `tether serve` does
// (with its heap floor): `runnerbench serve -cli AGENT [-env K=V]...`. It
// prints the address, then serves until stdin closes. Each line on stdin
// names a file to write a heap profile to (the idle case asks once its
// sessions are idle).
func serveChild(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	cli := fs.String("cli", "", "agent executable")
	env := map[string]string{}
	fs.Func("env", "`K=V` for the agent's environment (repeatable)", func(kv string) error {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("want K=V, not %q", kv)
		}
		env[k] = v
		return nil
	})
	floor := fs.Int64("gc-heap-floor", gcfloor.Default, "as tether serve's flag")
	exact := fs.Bool("exact-profile", false, "record every allocation (for a heap profile; costs memory)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the runner to `FILE`")
	allocs := fs.String("allocprofile", "", "write a profile of the runner's allocations to `FILE` when it ends")
	_ = fs.Parse(args)
	if *allocs != "" {
		defer writeAllocs(*allocs)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if *exact {
		runtime.MemProfileRate = 1
	}
	defer gcfloor.Start(uint64(max(*floor, 0))).Stop()
	// As cmd/tether does: agents' orphans come here to be ended.
	_, _ = transport.EnableSubreaper()
	ip, err := startInproc(*cli, env)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ip.close()
	fmt.Println("LISTENING", ip.url)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if err := writeHeapProfile(in.Text()); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		fmt.Println("PROFILED")
	}
	return 0
}

// writeAllocs writes the allocations profile (sampled) to path.
func writeAllocs(path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// child is a runner started with serveChild.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	url   string
}

// startChild starts `self serve` with the agent cli, its environment, a
// heap floor and extra flags, and waits for its address.
func startChild(self, cli string, env map[string]string, heapFloor int64, extra ...string) (*child, error) {
	cmd := exec.Command(self, "serve", "-cli", cli, "-gc-heap-floor", strconv.FormatInt(heapFloor, 10))
	for k, v := range env {
		cmd.Args = append(cmd.Args, "-env", k+"="+v)
	}
	cmd.Args = append(cmd.Args, extra...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	line, err := c.out.ReadString('\n')
	if err != nil {
		c.close()
		return nil, fmt.Errorf("runner child: %w", err)
	}
	c.url = strings.TrimSpace(strings.TrimPrefix(line, "LISTENING "))
	return c, nil
}

// close ends the child (EOF on its stdin) and waits for it.
func (c *child) close() {
	c.stdin.Close()
	_ = c.cmd.Wait()
}

// cpu returns the CPU time (user + system) of the child itself and of the
// children it reaped (the agents), from /proc/PID/stat.
func (c *child) cpu() (own, reaped time.Duration) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	// Fields after the command's closing parenthesis start with the
	// state (field 3); utime, stime, cutime, cstime are fields 14 to 17,
	// in clock ticks (100 a second on Linux).
	_, rest, _ := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if len(f) < 15 {
		return 0, 0
	}
	tick := func(i int) time.Duration {
		var n int64
		fmt.Sscan(f[i-3], &n)
		return time.Duration(n) * 10 * time.Millisecond
	}
	return tick(14) + tick(15), tick(16) + tick(17)
}
