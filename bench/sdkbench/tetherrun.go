package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"
)

// implTetherJSON is `tether run --json` against the fake: Claude Code
// through its canonical driver, every event printed as a JSON line to
// /dev/null.
const implTetherJSON = "go-tether-run-json"

// tetherRunMain times one `tether run --json` of the fake, output to
// /dev/null, and prints one JSON line as consume does. msgs counts what
// the fake wrote (system/init, the assistant messages, the result), as the
// TS consumer counts them.
func tetherRunMain(args []string) int {
	fs := flag.NewFlagSet("sdkbench tetherrun", flag.ExitOnError)
	tether := fs.String("tether", "", "the tether binary (go build -o … ./cmd/tether)")
	mode := fs.String("mode", "normal", "FAKE_MODE")
	n := fs.Int("n", 10, "FAKE_N")
	size := fs.Int("size", 100, "FAKE_SIZE")
	label := fs.String("label", "", "label for the JSON line")
	cli := fs.String("cli", "", "the fake CLI (default <module>/.cache/peer-sdk/fake-cli)")
	_ = fs.Parse(args)
	if *cli == "" {
		dir, err := peerDir("")
		if err != nil {
			fmt.Fprintln(os.Stderr, "sdkbench tetherrun:", err)
			return 1
		}
		*cli = filepath.Join(dir, "fake-cli")
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdkbench tetherrun:", err)
		return 1
	}
	defer devnull.Close()
	cmd := exec.Command(*tether, "run", "--cli", *cli, "--json", "--approve=allow", "bench")
	cmd.Env = append(os.Environ(), "FAKE_MODE="+*mode, "FAKE_N="+strconv.Itoa(*n), "FAKE_SIZE="+strconv.Itoa(*size))
	cmd.Stdout = devnull
	stderr := &tail{n: 4 << 10}
	cmd.Stderr = stderr
	began := time.Now()
	err = cmd.Run()
	wall := time.Since(began)
	msgs := *n + 2
	out := map[string]any{
		"label": *label, "impl": implTetherJSON, "go": runtime.Version(), "mode": *mode, "n": *n, "size": *size,
		"ok": err == nil, "messages": msgs, "wall_ms": float64(wall.Microseconds()) / 1000,
		"process_wall_ms": float64(wall.Microseconds()) / 1000, // tether's, not this wrapper's
		"msgs_per_s":      float64(msgs) / wall.Seconds(),
	}
	if ps := cmd.ProcessState; ps != nil {
		out["cpu_user_ms"] = float64(ps.UserTime().Microseconds()) / 1000
		out["cpu_sys_ms"] = float64(ps.SystemTime().Microseconds()) / 1000
	}
	if err != nil {
		out["error"] = map[string]any{"name": "exit", "message": err.Error() + ": " + stderr.String()}
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	if err != nil {
		return 1
	}
	return 0
}
