package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tetherhq/tether/internal/testing/testenv"
)

// record is one measurement: a JSON line from consume.mjs, floor.mjs or the
// Go consumer, with label/impl/rep/exit code forced by the runner. Numbers
// are pointers because the node scripts print null for what they cannot see.
type record struct {
	Label         string         `json:"label"`
	Impl          string         `json:"impl"`
	Note          string         `json:"note,omitempty"`
	Rep           int            `json:"rep"`
	OK            bool           `json:"ok"`
	Hung          bool           `json:"hung"`
	TimeoutMS     *float64       `json:"timeout_ms"`
	Messages      *float64       `json:"messages"`
	ByType        map[string]int `json:"by_type"`
	WireBytes     *float64       `json:"wire_bytes"`
	WallMS        *float64       `json:"wall_ms"`
	ProcessWallMS *float64       `json:"process_wall_ms"`
	MsgsPerS      *float64       `json:"msgs_per_s"`
	MBPerS        *float64       `json:"mb_per_s"`
	PeakRSSMB     *float64       `json:"peak_rss_mb"`
	BaselineRSSMB *float64       `json:"baseline_rss_mb"`
	PeakDeltaMB   *float64       `json:"peak_delta_mb"`
	DeltaPerLine  *float64       `json:"delta_per_line"`
	ResultAtMS    *float64       `json:"result_at_ms"`
	LinesSkipped  *float64       `json:"lines_skipped"`
	LineErrors    []string       `json:"line_errors"`
	Result        *struct {
		Subtype string `json:"subtype"`
		IsError bool   `json:"is_error"`
	} `json:"result"`
	Error *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	} `json:"error"`
	Integrity   map[string]any `json:"integrity"`
	StillAlive  bool           `json:"still_alive_after_done"`
	ExitCode    int            `json:"exit_code"`
	ProcessDied bool           `json:"process_died"`
	StderrTail  string         `json:"stderr_tail"`
}

// Implementations, in table order.
const (
	implDevnull  = "floor-devnull"
	implCat      = "floor-cat"
	implSplit    = "floor-split"
	implReadline = "floor-readline"
	implGoRead   = "go-floor-read"
	implGoParse  = "go-floor-parse"
	implTS       = "sdk-wrapper"
	implGo       = "go"
	implGoAlt    = "go-alt"
)

type runner struct {
	f       runFlags
	peer    string // writable harness copy
	self    string // this executable (the Go consumer)
	jsonl   *os.File
	records []record
}

func run(f runFlags) error {
	if f.from != "" {
		return rerender(f)
	}
	peer, err := peerDir(f.peer)
	if err != nil {
		return err
	}
	if err := ensureNodeModules(peer); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	resDir := filepath.Join(peer, "results")
	if err := os.MkdirAll(resDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(resDir, "sdkbench-"+time.Now().Format("20060102-150405")+".jsonl")
	jf, err := os.Create(path)
	if err != nil {
		return err
	}
	defer jf.Close()
	fmt.Fprintf(os.Stderr, "# writing %s\n", path)
	r := &runner{f: f, peer: peer, self: self, jsonl: jf}
	info := machineInfo(peer) // before the run: the load average and date are the start's

	if f.perf {
		for rep := 1; rep <= f.reps; rep++ {
			for _, c := range perfCases {
				if f.only != "" && !strings.Contains(c.Label, f.only) {
					continue
				}
				r.perfCase(c, rep)
			}
		}
	}
	if f.robust {
		for _, p := range probes {
			if (p.Big && !f.big) || (f.only != "" && !strings.Contains(p.Label, f.only)) {
				continue
			}
			r.probe(p)
		}
	}

	var md bytes.Buffer
	writeReport(&md, r.records, f, info, path)
	os.Stdout.Write(md.Bytes())
	if f.md != "" {
		return os.WriteFile(f.md, md.Bytes(), 0o644)
	}
	return nil
}

// rerender prints the tables of an earlier run from its JSONL file.
func rerender(f runFlags) error {
	data, err := os.ReadFile(f.from)
	if err != nil {
		return err
	}
	var recs []record
	for l := range bytes.Lines(data) {
		var rec record
		if err := json.Unmarshal(l, &rec); err != nil {
			return fmt.Errorf("%s: %w", f.from, err)
		}
		recs = append(recs, rec)
	}
	reps := 0
	for _, r := range recs {
		reps = max(reps, r.Rep)
	}
	f.reps, f.perf, f.robust = reps, reps > 0, slices.ContainsFunc(recs, func(r record) bool { return r.Rep == 0 })
	var md bytes.Buffer
	writeReport(&md, recs, f, []string{"re-rendered from an earlier run (machine details are in that run's report)"}, f.from)
	os.Stdout.Write(md.Bytes())
	return nil
}

func (r *runner) perfCase(c perfCase, rep int) {
	fake := []string{"--mode", c.Mode, "--n", strconv.Itoa(c.N), "--size", strconv.Itoa(c.Size)}
	if c.SlowMS == 0 {
		// split first: its counts feed the sinks that cannot count
		split := r.exec(c.Label, implSplit, "", rep, nil, "node", append([]string{"floor.mjs", "--sink", "split"}, fake...)...)
		counts := []string{}
		if split.WireBytes != nil && split.Messages != nil {
			counts = []string{"--wire-bytes", fmtInt(*split.WireBytes), "--messages", fmtInt(*split.Messages)}
		}
		r.exec(c.Label, implDevnull, "", rep, nil, "node", concat([]string{"floor.mjs", "--sink", "devnull"}, fake, counts)...)
		if r.f.floorsAll {
			r.exec(c.Label, implCat, "", rep, nil, "node", concat([]string{"floor.mjs", "--sink", "cat"}, fake, counts)...)
		}
		r.exec(c.Label, implReadline, "", rep, nil, "node", append([]string{"floor.mjs", "--sink", "readline"}, fake...)...)
		if r.f.goFloors {
			base := concat([]string{"consume", "-cli", r.fakeCLI(), "-label", c.Label}, goFake(c.Mode, c.N, c.Size))
			r.exec(c.Label, implGoRead, "", rep, nil, r.self, append(base, "-floor", "read")...)
			r.exec(c.Label, implGoParse, "", rep, nil, r.self, append(base, "-floor", "parse")...)
		}
	}
	ts := concat([]string{"consume.mjs", "--launch", "wrapper"}, fake)
	goArgs := concat([]string{"consume", "-cli", r.fakeCLI(), "-label", c.Label}, goFake(c.Mode, c.N, c.Size))
	if c.SlowMS > 0 {
		ts = append(ts, "--slow-consumer", strconv.Itoa(c.SlowMS))
		goArgs = append(goArgs, "-slow-consumer", strconv.Itoa(c.SlowMS))
	}
	runTS := func() { r.exec(c.Label, implTS, "", rep, nil, "node", ts...) }
	runGo := func() {
		r.exec(c.Label, implGo, "", rep, nil, r.self, goArgs...)
		if r.f.tether != "" && c.Label == caseSmall {
			r.exec(c.Label, implTetherJSON, "", rep, nil, r.self, concat([]string{"tetherrun", "-tether", r.f.tether,
				"-cli", r.fakeCLI(), "-label", c.Label}, goFake(c.Mode, c.N, c.Size))...)
		}
		if r.f.altBin != "" {
			r.exec(c.Label, implGoAlt, r.f.altLabel, rep, nil, r.f.altBin, goArgs...)
		}
	}
	// alternate which SDK goes first, so neither always gets the warmer cache
	if rep%2 == 1 {
		runGo()
		runTS()
	} else {
		runTS()
		runGo()
	}
}

func (r *runner) probe(p probe) {
	goArgs := concat([]string{"consume", "-cli", r.fakeCLI(), "-label", p.Label, "-timeout", probeTimeout}, goFake(p.Mode, p.N, p.Size), p.GoArgs)
	r.exec(p.Label, implGo, p.GoNote, 0, p.Env, r.self, goArgs...)
	if r.f.robustTS && !p.NoTS {
		d, _ := time.ParseDuration(probeTimeout)
		ts := concat([]string{"consume.mjs", "--launch", "wrapper", "--mode", p.Mode, "--n", strconv.Itoa(p.N),
			"--size", strconv.Itoa(p.Size), "--timeout", strconv.FormatInt(d.Milliseconds(), 10)}, p.TSArgs)
		r.exec(p.Label, implTS, "", 0, p.Env, "node", ts...)
	}
}

func goFake(mode string, n, size int) []string {
	return []string{"-mode", mode, "-n", strconv.Itoa(n), "-size", strconv.Itoa(size)}
}

func (r *runner) fakeCLI() string { return filepath.Join(r.peer, "fake-cli") }

// exec runs one measurement process in the harness folder and records its
// JSON line, or a synthetic record when it printed none (the process died).
func (r *runner) exec(label, impl, note string, rep int, env []string, name string, args ...string) record {
	ctx, cancel := context.WithTimeout(context.Background(), r.f.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = r.peer
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout bytes.Buffer
	stderr := &tail{n: 4 << 10}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	began := time.Now()
	err := cmd.Run()
	processWall := time.Since(began)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}

	fields := map[string]any{}
	var line []byte
	for l := range bytes.Lines(stdout.Bytes()) {
		if bytes.HasPrefix(l, []byte("{")) {
			line = l
			break
		}
	}
	if line == nil || json.Unmarshal(line, &fields) != nil {
		fields = map[string]any{"ok": false, "process_died": true, "stderr_tail": stderr.String()}
		if ctx.Err() != nil {
			fields["stderr_tail"] = fmt.Sprintf("killed after %s; %s", r.f.timeout, stderr.String())
		}
	}
	fields["label"], fields["impl"], fields["rep"], fields["exit_code"] = label, impl, rep, code
	if _, ok := fields["process_wall_ms"]; !ok { // a consumer's own process, start to exit
		fields["process_wall_ms"] = float64(processWall.Microseconds()) / 1000
	}
	if note != "" {
		fields["note"] = note
	}
	b, _ := json.Marshal(fields)
	r.jsonl.Write(append(b, '\n'))
	var rec record
	_ = json.Unmarshal(b, &rec)
	r.records = append(r.records, rec)
	fmt.Fprintf(os.Stderr, "%s\n", truncate(string(b), 220))
	return rec
}

// tail keeps the last n bytes written.
type tail struct {
	n   int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.n; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tail) String() string { return string(t.buf) }

// peerDir returns a writable copy of shared/bench/peer-sdk, refreshing the
// harness files from the shared folder (which is read-only). override, if
// set, is used as the copy's location.
func peerDir(override string) (string, error) {
	root, ok := testenv.ModuleRoot()
	if !ok {
		return "", errors.New("cannot find the module root (run from inside the repository)")
	}
	src := filepath.Join(filepath.Dir(root), "shared", "bench", "peer-sdk")
	dst := override
	if dst == "" {
		dst = filepath.Join(root, ".cache", "peer-sdk")
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return "", fmt.Errorf("peer harness not found beside the repository: %w", err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue // results/, node_modules/: never copied
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return "", err
		}
	}
	return dst, nil
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, data) {
		return nil
	}
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, data, st.Mode().Perm()|0o200); err != nil {
		return err
	}
	if err := os.Chmod(tmp, st.Mode().Perm()|0o200); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// ensureNodeModules installs the pinned TS SDK the first time, as run.sh
// does (--omit=optional skips the bundled native claude binary).
func ensureNodeModules(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-agent-sdk", "package.json")); err == nil {
		return nil
	}
	fmt.Fprintln(os.Stderr, "# npm install in", dir)
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--omit=optional")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm install in %s: %w", dir, err)
	}
	return nil
}

// machineInfo describes the machine for the report header.
func machineInfo(peer string) []string {
	var info []string
	cpu := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for l := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	nproc := strings.TrimSpace(cmdOut("nproc"))
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if l, _, ok := strings.Cut(string(b), "\n"); ok {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				mem = fmt.Sprintf(", %.0f GiB RAM", kb/(1<<20))
			}
		}
	}
	info = append(info, fmt.Sprintf("machine: %s CPU(s), %s%s", nproc, cpu, mem))
	info = append(info, "go: "+strings.TrimSpace(cmdOut("go", "version")))
	info = append(info, "node: "+strings.TrimSpace(cmdOut("node", "--version")))
	if b, err := os.ReadFile(filepath.Join(peer, "node_modules", "@anthropic-ai", "claude-agent-sdk", "package.json")); err == nil {
		var p struct {
			Version string `json:"version"`
		}
		_ = json.Unmarshal(b, &p)
		info = append(info, "TS SDK: @anthropic-ai/claude-agent-sdk "+p.Version)
	}
	info = append(info, "SDK sources: "+sourceID())
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			info = append(info, "load average when the run started (1/5/15 min): "+strings.Join(f[:3], " "))
		}
	}
	info = append(info, "started: "+time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	return info
}

// sourceID names the SDK code measured: the commit, or (no commit yet, or a
// dirty tree) a hash of the non-test Go files of claude/, protocol/ and
// transport/.
func sourceID() string {
	root, ok := testenv.ModuleRoot()
	if !ok {
		return "?"
	}
	h := sha256.New()
	n := 0
	for _, dir := range []string{"claude", "protocol", "transport"} {
		_ = filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err == nil {
				rel, _ := filepath.Rel(root, p)
				fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
				h.Write(b)
				n++
			}
			return nil
		})
	}
	id := fmt.Sprintf("sha256 %x of %d non-test .go files in claude/, protocol/, transport/", h.Sum(nil)[:8], n)
	if head := strings.TrimSpace(cmdOut("git", "-C", root, "rev-parse", "--short", "HEAD")); head != "?" && head != "" {
		id = "commit " + head + "; " + id
	}
	return id
}

func cmdOut(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "?"
	}
	return string(out)
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func fmtInt(x float64) string { return strconv.FormatInt(int64(x), 10) }
