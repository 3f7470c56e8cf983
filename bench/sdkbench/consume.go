package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
	"github.com/tetherhq/tether/protocol/ndjson"
)

// consumeResult is the Go consumer's one JSON line. Field names follow
// consume.mjs where they mean the same thing, so the parent reads both alike.
type consumeResult struct {
	Label      string         `json:"label"`
	Impl       string         `json:"impl"`
	GoVersion  string         `json:"go"`
	GOMAXPROCS int            `json:"gomaxprocs"`
	Mode       string         `json:"mode"`
	N          int            `json:"n"`
	Size       int            `json:"size"`
	OK         bool           `json:"ok"`
	Hung       bool           `json:"hung"`
	TimeoutMS  int64          `json:"timeout_ms"`
	Messages   int            `json:"messages"`
	ByType     map[string]int `json:"by_type"`
	Assistant  int            `json:"assistant_messages"`
	TextBytes  int64          `json:"text_bytes"`
	// WireBytes is Σ len(msg.Raw())+1 over the messages delivered (the
	// initialize control_response and skipped lines are not messages).
	WireBytes     int64   `json:"wire_bytes"`
	FakeWireBytes *int64  `json:"fake_wire_bytes,omitempty"` // what the fake says it wrote
	FakePeakRSSMB float64 `json:"fake_peak_rss_mb,omitempty"`
	WallMS        float64 `json:"wall_ms"`
	FirstMsgMS    float64 `json:"first_msg_ms"`
	ResultAtMS    float64 `json:"result_at_ms,omitempty"`
	MsgsPerS      float64 `json:"msgs_per_s"`
	MBPerS        float64 `json:"mb_per_s"`
	// Memory: maxrss of this process, its RSS just before Query, and the
	// difference (what the query itself cost).
	PeakRSSMB     float64  `json:"peak_rss_mb"`
	BaselineRSSMB float64  `json:"baseline_rss_mb"`
	PeakDeltaMB   float64  `json:"peak_delta_mb"`
	DeltaPerLine  *float64 `json:"delta_per_line,omitempty"` // huge-line: (peak-baseline)/line size
	SlowConsumer  int      `json:"slow_consumer_ms_per_1000,omitempty"`
	InitTimeoutMS int64    `json:"initialize_timeout_ms,omitempty"`
	MaxLineSize   int      `json:"max_line_size,omitempty"`
	CPUUserMS     float64  `json:"cpu_user_ms"` // this process only (the fake is a child, not counted)
	CPUSysMS      float64  `json:"cpu_sys_ms"`
	LinesSkipped  int64    `json:"lines_skipped"`
	LineErrors    []string `json:"line_errors,omitempty"` // the first few OnLineError texts
	Result        *struct {
		Subtype string `json:"subtype"`
		IsError bool   `json:"is_error"`
	} `json:"result"`
	Error      *errInfo       `json:"error"`
	Integrity  map[string]any `json:"integrity,omitempty"`
	Goroutines int            `json:"goroutines_after"`
}

type errInfo struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	After   int    `json:"thrown_after_messages"`
}

func consumeMain(args []string) int {
	fs := flag.NewFlagSet("sdkbench consume", flag.ExitOnError)
	mode := fs.String("mode", "normal", "FAKE_MODE")
	n := fs.Int("n", 10, "FAKE_N")
	size := fs.Int("size", 100, "FAKE_SIZE")
	delay := fs.Int("delay", 10, "FAKE_DELAY_MS (slow mode)")
	label := fs.String("label", "", "label for the JSON line")
	slow := fs.Int("slow-consumer", 0, "sleep this many ms after every 1000 messages")
	timeout := fs.Duration("timeout", 20*time.Second, "hard timeout for the whole query (ctx deadline); expiry = hung")
	initTimeout := fs.Duration("init-timeout", 0, "claude.Options.InitializeTimeout (0: SDK default)")
	maxLine := fs.Int("max-line-size", 0, "claude.Options.MaxLineSize (0: SDK default)")
	cli := fs.String("cli", "", "CLIPath (default <module>/.cache/peer-sdk/fake-cli, the sh wrapper)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the query to this file")
	memprofile := fs.String("memprofile", "", "write a heap (alloc) profile after the query to this file")
	floor := fs.String("floor", "", "instead of the SDK: \"read\" = spawn the fake, frame lines with ndjson.Reader; \"parse\" = also claudecode.Parse each line (one goroutine, no SDK)")
	_ = fs.Parse(args)

	if *cli == "" {
		dir, err := peerDir("")
		if err != nil {
			fmt.Fprintln(os.Stderr, "sdkbench consume:", err)
			return 1
		}
		*cli = filepath.Join(dir, "fake-cli")
	}
	if *label == "" {
		*label = fmt.Sprintf("%s n=%d size=%d", *mode, *n, *size)
	}
	if *memprofile != "" {
		runtime.MemProfileRate = 64 << 10
	}

	impl := "go"
	if *floor != "" {
		impl = "go-floor-" + *floor
	}
	out := &consumeResult{
		Label: *label, Impl: impl, GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		Mode: *mode, N: *n, Size: *size, TimeoutMS: timeout.Milliseconds(), ByType: map[string]int{},
		SlowConsumer: *slow, InitTimeoutMS: initTimeout.Milliseconds(), MaxLineSize: *maxLine,
	}
	var printOnce sync.Once
	print := func() {
		printOnce.Do(func() {
			out.PeakRSSMB = maxRSSMB()
			out.CPUUserMS, out.CPUSysMS = cpuMS()
			out.PeakDeltaMB = round1(out.PeakRSSMB - out.BaselineRSSMB)
			if *mode == "huge-line" && *size > 0 {
				r := round3(out.PeakDeltaMB * (1 << 20) / float64(*size))
				out.DeltaPerLine = &r
			}
			b, _ := json.Marshal(out)
			os.Stdout.Write(append(b, '\n'))
		})
	}

	var skipped atomic.Int64
	var lineErrMu sync.Mutex
	opts := claude.Options{
		CLIPath: *cli,
		Env: map[string]string{
			"FAKE_MODE":     *mode,
			"FAKE_N":        strconv.Itoa(*n),
			"FAKE_SIZE":     strconv.Itoa(*size),
			"FAKE_DELAY_MS": strconv.Itoa(*delay),
		},
		OnLineError: func(err error) {
			skipped.Add(1)
			lineErrMu.Lock()
			if len(out.LineErrors) < 3 {
				out.LineErrors = append(out.LineErrors, truncate(err.Error(), 300))
			}
			lineErrMu.Unlock()
		},
		InitializeTimeout: *initTimeout,
		MaxLineSize:       *maxLine,
	}

	// Last resort if the SDK does not unwind after the deadline: report
	// what we have as hung and leave.
	var finished atomic.Bool
	go func() {
		time.Sleep(*timeout + 15*time.Second)
		if finished.Load() {
			return
		}
		out.Hung = true
		out.Error = &errInfo{Name: "Watchdog", Message: fmt.Sprintf("no completion %s after the %s deadline", 15*time.Second, *timeout), After: out.Messages}
		print()
		os.Exit(3)
	}()

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
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var lastErr error
	var resultRaw []byte
	out.BaselineRSSMB = currentRSSMB()
	t0 := time.Now()
	msgs := claude.Query(ctx, "bench", opts)
	if *floor != "" {
		msgs = floorMessages(ctx, *floor, *cli, opts.Env)
	}
	for msg, err := range msgs {
		if err != nil {
			lastErr = err
			continue // the iterator ends after an error
		}
		if out.Messages == 0 {
			out.FirstMsgMS = msSince(t0)
		}
		out.Messages++
		if *slow > 0 && out.Messages%1000 == 0 {
			time.Sleep(time.Duration(*slow) * time.Millisecond)
		}
		out.WireBytes += int64(len(msg.Raw())) + 1
		switch m := msg.(type) {
		case *claude.SystemMessage:
			out.ByType["system/"+m.Subtype]++
		case *claude.AssistantMessage:
			out.ByType["assistant"]++
			out.Assistant++
			for _, b := range m.Message.Content {
				if t, ok := b.(claude.TextBlock); ok {
					out.TextBytes += int64(len(t.Text))
				}
			}
		case *claude.ResultMessage:
			out.ByType["result"]++
			out.Result = &struct {
				Subtype string `json:"subtype"`
				IsError bool   `json:"is_error"`
			}{m.Subtype, m.IsError}
			out.ResultAtMS = msSince(t0)
			resultRaw = m.Raw()
		case *claude.UnknownMessage:
			out.ByType["unknown:"+strconv.Quote(m.Type())]++
		case rawLine: // floor "read": only the type, from the line's prefix
			typ := string(prefixType(m))
			out.ByType[typ]++
			switch typ {
			case "assistant":
				out.Assistant++
			case "result":
				out.Result = &struct {
					Subtype string `json:"subtype"`
					IsError bool   `json:"is_error"`
				}{"success", false}
				out.ResultAtMS = msSince(t0)
				resultRaw = m
			}
		default:
			out.ByType[fmt.Sprintf("%T:%s", msg, msg.Type())]++
		}
	}
	wall := time.Since(t0)
	finished.Store(true)
	if *cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	hung := ctx.Err() != nil
	cancel()

	out.WallMS = round1(float64(wall.Microseconds()) / 1000)
	out.MsgsPerS = math.Round(float64(out.Messages) / wall.Seconds())
	out.MBPerS = round1(float64(out.WireBytes) / 1e6 / wall.Seconds())
	out.LinesSkipped = skipped.Load()
	out.Hung = hung
	if lastErr != nil {
		out.Error = &errInfo{Name: errName(lastErr), Message: truncate(lastErr.Error(), 600), After: out.Messages}
	}
	out.OK = lastErr == nil && !hung && out.Result != nil && !out.Result.IsError
	if resultRaw != nil {
		var r struct {
			Stats *struct {
				BytesWritten int64 `json:"bytes_written"`
				MaxRSSKB     int64 `json:"max_rss_kb"`
			} `json:"fake_stats"`
		}
		if json.Unmarshal(resultRaw, &r) == nil && r.Stats != nil {
			out.FakeWireBytes = &r.Stats.BytesWritten
			out.FakePeakRSSMB = round1(float64(r.Stats.MaxRSSKB) / 1024)
		}
	}
	switch mode := *mode; {
	case *floor == "read": // nothing decoded: no text to check
	case mode == "huge-line":
		out.Integrity = map[string]any{"expected_text_bytes": *size, "got_text_bytes": out.TextBytes, "intact": out.TextBytes == int64(*size)}
	case mode == "normal" || mode == "garbage" || mode == "slow":
		out.Integrity = map[string]any{"expected_assistant": *n, "got_assistant": out.Assistant, "intact": out.Assistant == *n}
	case mode == "crash-midstream" || mode == "crash-midline" || mode == "kill-midstream" || mode == "exit0-midstream":
		out.Integrity = map[string]any{"expected_before_crash": *n / 2, "got_assistant": out.Assistant}
	}
	if intact, ok := out.Integrity["intact"].(bool); ok && !intact {
		out.OK = false // e.g. a line over MaxLineSize skipped: a result, but not all the output
	}
	out.Goroutines = runtime.NumGoroutine()
	if *memprofile != "" {
		if f, err := os.Create(*memprofile); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	print()
	return 0
}

// errName is the error's type, with the sentinel it matches when useful.
func errName(err error) string {
	name := fmt.Sprintf("%T", err)
	for _, s := range []struct {
		target error
		name   string
	}{
		{claude.ErrNoResult, "ErrNoResult"},
		{claude.ErrInitializeTimeout, "ErrInitializeTimeout"},
		{claude.ErrControlTimeout, "ErrControlTimeout"},
		{claude.ErrProcessExited, "ErrProcessExited"},
		{context.DeadlineExceeded, "context.DeadlineExceeded"},
		{context.Canceled, "context.Canceled"},
	} {
		if errors.Is(err, s.target) {
			return name + " (" + s.name + ")"
		}
	}
	var pe *claude.ProcessError
	if errors.As(err, &pe) {
		if _, direct := err.(*claude.ProcessError); direct {
			return "*claude.ProcessError"
		}
		return name + " (wraps *claude.ProcessError)"
	}
	return name
}

// maxRSSMB is this process's peak resident set (getrusage RUSAGE_SELF).
func maxRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return round1(float64(ru.Maxrss) / 1024) // Linux: KiB
}

// cpuMS is this process's user and system CPU time so far.
func cpuMS() (user, sys float64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return round1(float64(ru.Utime.Nano()) / 1e6), round1(float64(ru.Stime.Nano()) / 1e6)
}

// currentRSSMB is this process's resident set now (VmRSS).
func currentRSSMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			fields := bytes.Fields(v)
			if len(fields) > 0 {
				kb, _ := strconv.ParseFloat(string(fields[0]), 64)
				return round1(kb / 1024)
			}
		}
	}
	return 0
}

func msSince(t time.Time) float64 { return round1(float64(time.Since(t).Microseconds()) / 1000) }

func round1(x float64) float64 { return math.Round(x*10) / 10 }
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// floorMessages is the Go floor: the fake spawned through the same wrapper,
// the two protocol lines floor.mjs writes, stdout framed by the SDK's own
// ndjson.Reader on this goroutine, and (parse) each line decoded by the SDK's
// claudecode.Parse. No SDK client, queue or second goroutine. In "read" mode
// lines are not decoded: each comes back as a claudecode.Unknown holding only
// the raw line, and the result is recognised by its prefix.
func floorMessages(ctx context.Context, how, cli string, env map[string]string) iter.Seq2[claude.Message, error] {
	return func(yield func(claude.Message, error) bool) {
		cmd := exec.CommandContext(ctx, cli, "--output-format", "stream-json", "--verbose", "--input-format", "stream-json")
		cmd.Env = os.Environ()
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			yield(nil, err)
			return
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			yield(nil, err)
			return
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			yield(nil, err)
			return
		}
		defer cmd.Wait()
		defer stdin.Close()
		_, _ = io.WriteString(stdin, floorProto)
		r := ndjson.NewReader(stdout, 0)
		for {
			line, err := r.ReadLine()
			if errors.Is(err, ndjson.ErrSkipped) {
				continue
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					yield(nil, err)
				}
				break
			}
			if bytes.HasPrefix(line, []byte(`{"type":"control_response"`)) {
				continue
			}
			if how != "parse" && (len(prefixType(line)) == 0 || line[len(line)-1] != '}') {
				continue // what Parse would reject (the garbage probes' lines)
			}
			var msg claude.Message
			if how == "parse" {
				if msg, err = cc.Parse(line); err != nil {
					continue
				}
			} else {
				msg = rawLine(line)
			}
			if !yield(msg, nil) {
				return
			}
			if _, ok := msg.(*claude.ResultMessage); ok || bytes.HasPrefix(line, []byte(`{"type":"result"`)) {
				stdin.Close() // as the SDK does after a single-turn result
			}
		}
		if err := cmd.Wait(); err != nil {
			yield(nil, err)
		}
	}
}

const floorProto = `{"request_id":"floor1","type":"control_request","request":{"subtype":"initialize","systemPrompt":[""]}}` + "\n" +
	`{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":"benchmark turn"}]},"parent_tool_use_id":null}` + "\n"

// rawLine is an undecoded line (floor "read").
type rawLine []byte

func (l rawLine) Type() string { return "raw" }
func (l rawLine) Raw() []byte  { return l }

// prefixType is X in a line starting {"type":"X" (the fake's lines do).
func prefixType(line []byte) []byte {
	rest, ok := bytes.CutPrefix(line, []byte(`{"type":"`))
	if !ok {
		return nil
	}
	if i := bytes.IndexByte(rest, '"'); i >= 0 {
		return rest[:i]
	}
	return nil
}
