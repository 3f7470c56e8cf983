package main

// The cases mirror shared/bench/peer-sdk/run.sh: same labels, same FAKE_MODE,
// FAKE_N and FAKE_SIZE, so rows line up with that harness's RESULTS.md.

// perfCase is a throughput/memory case, run reps times. Floors run for every
// case except the slow-consumer one (a floor has no consumer to slow).
type perfCase struct {
	Label  string
	Mode   string
	N      int
	Size   int
	SlowMS int // consumer sleeps this long after every 1000 messages
	// FastLabel names the case whose Go peak RSS a slow-consumer case is
	// judged against.
	FastLabel string
}

const (
	caseSmall   = "N=100000,SIZE=100"
	caseLine50  = "huge-line 50MB"
	caseSlow    = "slow consumer N=100000,SIZE=100 (20 ms / 1000 msgs)"
	line50Bytes = 50_000_000
)

var perfCases = []perfCase{
	{Label: caseSmall, Mode: "normal", N: 100_000, Size: 100},
	{Label: "N=10000,SIZE=10000", Mode: "normal", N: 10_000, Size: 10_000},
	{Label: "huge-line 1MB", Mode: "huge-line", N: 1, Size: 1_000_000},
	{Label: "huge-line 10MB", Mode: "huge-line", N: 1, Size: 10_000_000},
	{Label: caseLine50, Mode: "huge-line", N: 1, Size: line50Bytes},
	{Label: "garbage N=10000,SIZE=100", Mode: "garbage", N: 10_000, Size: 100},
	{Label: caseSlow, Mode: "normal", N: 100_000, Size: 100, SlowMS: 20, FastLabel: caseSmall},
}

// probe is a robustness case, run once through each SDK.
type probe struct {
	Label  string
	Mode   string
	N      int
	Size   int
	Env    []string // extra environment for the fake (both consumers pass it on)
	GoArgs []string // extra flags for the Go consumer only
	GoNote string   // shown next to the Go row when GoArgs change a default
	TSArgs []string
	NoTS   bool // a Go-only variant
	Big    bool // only with -big
}

// probeTimeout is the hard timeout of every probe, for both SDKs: a probe
// still running then is reported as hung.
const probeTimeout = "20s"

var probes = []probe{
	{Label: "crash-midstream (exit 1 after 5000/10000)", Mode: "crash-midstream", N: 10_000, Size: 100},
	{Label: "crash-midline (half a JSON line, exit 1)", Mode: "crash-midline", N: 10_000, Size: 100},
	{Label: "kill-midstream (SIGKILL after 5000/10000)", Mode: "kill-midstream", N: 10_000, Size: 100},
	{Label: "exit0-midstream (exit 0, no result)", Mode: "exit0-midstream", N: 10_000, Size: 100},
	{Label: "garbage-json line: null", Mode: "garbage-json", N: 10, Size: 100, Env: []string{"FAKE_GARBAGE_LINE=null"}},
	{Label: "garbage-json line: 42", Mode: "garbage-json", N: 10, Size: 100, Env: []string{"FAKE_GARBAGE_LINE=42"}},
	{Label: "garbage-json line: [1,2,3]", Mode: "garbage-json", N: 10, Size: 100, Env: []string{"FAKE_GARBAGE_LINE=[1,2,3]"}},
	{Label: `garbage-json line: "a string"`, Mode: "garbage-json", N: 10, Size: 100, Env: []string{`FAKE_GARBAGE_LINE="a string"`}},
	{Label: "garbage-json line: {}", Mode: "garbage-json", N: 10, Size: 100, Env: []string{"FAKE_GARBAGE_LINE={}"}},
	{Label: `garbage-json line: {"type":"bogus"}`, Mode: "garbage-json", N: 10, Size: 100, Env: []string{`FAKE_GARBAGE_LINE={"type":"bogus"}`}},
	{Label: "CLI stays alive after result (FAKE_HANG_AFTER_RESULT=1)", Mode: "normal", N: 10, Size: 100, Env: []string{"FAKE_HANG_AFTER_RESULT=1"}},
	{Label: "CLI closes stdout, stays alive (FAKE_CLOSE_STDOUT_AND_LINGER=1)", Mode: "normal", N: 10, Size: 100, Env: []string{"FAKE_CLOSE_STDOUT_AND_LINGER=1"}},
	{Label: "no initialize response (FAKE_NO_INIT_RESPONSE=1)", Mode: "normal", N: 10, Size: 100, Env: []string{"FAKE_NO_INIT_RESPONSE=1"},
		GoArgs: []string{"-init-timeout", "2s"}, GoNote: "InitializeTimeout=2s (this probe only)"},
	{Label: "huge-line 200MB", Mode: "huge-line", N: 1, Size: 200_000_000, Big: true,
		GoNote: "default MaxLineSize (64 MiB)"},
	{Label: "huge-line 200MB", Mode: "huge-line", N: 1, Size: 200_000_000, Big: true, NoTS: true,
		GoArgs: []string{"-max-line-size", "268435456"}, GoNote: "MaxLineSize=256 MiB"},
}
