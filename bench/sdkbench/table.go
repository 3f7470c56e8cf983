package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

var implOrder = []string{implDevnull, implCat, implSplit, implReadline, implGoRead, implGoParse, implTS, implGo, implGoAlt, implTetherJSON}

var implDesc = map[string]string{
	implDevnull:    "fake → /dev/null",
	implCat:        "fake \\| cat",
	implSplit:      "node split+JSON.parse",
	implReadline:   "node readline+JSON.parse",
	implGoRead:     "Go ndjson.Reader, no decode",
	implGoParse:    "Go ndjson.Reader + claudecode.Parse",
	implTS:         "TS SDK query() (sh wrapper)",
	implGo:         "**Go claude.Query (sh wrapper)**",
	implTetherJSON: "tether run --json (canonical events) → /dev/null",
}

// Targets from the issue.
const (
	targetVsTS       = 2.0
	targetVsFloor    = 0.8
	targetLineMemory = 1.5
)

type stats struct{ recs []record }

func (s stats) med(get func(record) *float64) (float64, bool) {
	var v []float64
	for _, r := range s.recs {
		if p := get(r); p != nil && !math.IsNaN(*p) && !math.IsInf(*p, 0) {
			v = append(v, *p)
		}
	}
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	m := len(v) / 2
	if len(v)%2 == 1 {
		return v[m], true
	}
	return (v[m-1] + v[m]) / 2, true
}

// spread is max − min over the runs.
func (s stats) spread(get func(record) *float64) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range s.recs {
		if p := get(r); p != nil {
			lo, hi = min(lo, *p), max(hi, *p)
		}
	}
	if hi < lo {
		return 0
	}
	return hi - lo
}

func (s stats) allOK() bool {
	for _, r := range s.recs {
		if !r.OK {
			return false
		}
	}
	return len(s.recs) > 0
}

func pick(recs []record, label, impl string) stats {
	var out []record
	for _, r := range recs {
		if r.Label == label && r.Impl == impl && r.Rep > 0 {
			out = append(out, r)
		}
	}
	return stats{out}
}

var (
	msgsPerS  = func(r record) *float64 { return r.MsgsPerS }
	messages  = func(r record) *float64 { return r.Messages }
	wireBytes = func(r record) *float64 { return r.WireBytes }
	wallMS    = func(r record) *float64 { return r.WallMS }
	procWall  = func(r record) *float64 { return r.ProcessWallMS }
	mbPerS    = func(r record) *float64 { return r.MBPerS }
	peakRSS   = func(r record) *float64 { return r.PeakRSSMB }
	baseRSS   = func(r record) *float64 { return r.BaselineRSSMB }
	deltaRSS  = func(r record) *float64 { return r.PeakDeltaMB }
	perLine   = func(r record) *float64 { return r.DeltaPerLine }
)

func writeReport(w io.Writer, recs []record, f runFlags, info []string, jsonl string) {
	fmt.Fprintln(w, "## Setup")
	fmt.Fprintln(w)
	for _, l := range info {
		fmt.Fprintf(w, "- %s\n", l)
	}
	fmt.Fprintf(w, "- raw data: `%s`\n\n", shortPath(jsonl))
	if f.perf {
		writePerf(w, recs, f)
		writeMemory(w, recs)
		writeSlow(w, recs)
		writeTargets(w, recs)
		writeWholeProcesses(w, recs)
	}
	if f.robust {
		writeRobust(w, recs)
	}
}

func writePerf(w io.Writer, recs []record, f runFlags) {
	fmt.Fprintf(w, "## Throughput (median of %d runs)\n\n", f.reps)
	fmt.Fprintln(w, "| case | path | msgs | wire MB | wall ms | msgs/s | MB/s | peak RSS MB | ratio vs TS | ratio vs floor | ok |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, c := range perfCases {
		floor, hasFloor := pick(recs, c.Label, implDevnull).med(msgsPerS)
		ts, hasTS := pick(recs, c.Label, implTS).med(msgsPerS)
		for _, impl := range implOrder {
			s := pick(recs, c.Label, impl)
			if len(s.recs) == 0 {
				continue
			}
			rate, hasRate := s.med(msgsPerS)
			vsTS, vsFloor := "–", "–"
			if strings.HasPrefix(impl, "go") && hasTS && hasRate && ts > 0 {
				vsTS = fmt.Sprintf("%.2f×", rate/ts)
				if impl == implGo {
					vsTS = "**" + vsTS + "**"
				}
			}
			if impl != implDevnull && hasFloor && hasRate && floor > 0 {
				vsFloor = fmt.Sprintf("%.2f×", rate/floor)
				if impl == implGo {
					vsFloor = "**" + vsFloor + "**"
				}
			}
			ok := "yes"
			if !s.allOK() {
				ok = "NO"
			}
			desc := implDesc[impl]
			if impl == implGoAlt {
				desc = "Go claude.Query, " + s.recs[0].Note
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s (%d) |\n",
				c.Label, desc, num(s, messages, 0, 1), num(s, wireBytes, 1, 1e-6), num(s, wallMS, 0, 1),
				num(s, msgsPerS, 0, 1), num(s, mbPerS, 1, 1), num(s, peakRSS, 0, 1), vsTS, vsFloor, ok, len(s.recs))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "wall ms: from just before the spawn / `query()` / `claude.Query` to the last message consumed with the child exited")
	fmt.Fprintln(w, "(SDK rows include spawning the sh wrapper → node and the initialize handshake). msgs: system/init + assistant + result.")
	fmt.Fprintln(w, "wire MB: node rows, what the fake wrote (fake_stats); Go row, Σ len(msg.Raw())+1 over the delivered messages")
	fmt.Fprintln(w, "(excludes the initialize control_response and skipped garbage lines). peak RSS: the consuming process's maxrss.")
	fmt.Fprintln(w, "ratio vs TS: Go msgs/s ÷ TS SDK msgs/s; ratio vs floor: msgs/s ÷ (fake → /dev/null) msgs/s; both from the medians above.")
	fmt.Fprintln(w)
}

func writeMemory(w io.Writer, recs []record) {
	fmt.Fprintln(w, "## Memory on huge lines (median)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| case | path | RSS before query MB | peak RSS MB | peak − before MB | (peak − before) ÷ line | peak ÷ line | TS SDK peak RSS MB | node readline floor peak RSS MB |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range perfCases {
		if c.Mode != "huge-line" {
			continue
		}
		for _, impl := range []string{implGo, implGoAlt} {
			g := pick(recs, c.Label, impl)
			if len(g.recs) == 0 {
				continue
			}
			desc := implDesc[impl]
			if impl == implGoAlt {
				desc = "Go claude.Query, " + g.recs[0].Note
			}
			lineMB := float64(c.Size) / (1 << 20)
			peak, _ := g.med(peakRSS)
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %.2f× | %s | %s |\n", c.Label, desc,
				num(g, baseRSS, 1, 1), num(g, peakRSS, 1, 1), num(g, deltaRSS, 1, 1), numX(g, perLine),
				peak/lineMB, num(pick(recs, c.Label, implTS), peakRSS, 0, 1), num(pick(recs, c.Label, implReadline), peakRSS, 0, 1))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "MB here are MiB (maxrss KiB ÷ 1024); line = FAKE_SIZE bytes of text. \"before\" is the Go consumer's VmRSS just before")
	fmt.Fprintln(w, "claude.Query; the 1.5× target is judged on (peak − before) ÷ line.")
	fmt.Fprintln(w)
}

func writeSlow(w io.Writer, recs []record) {
	for _, c := range perfCases {
		if c.SlowMS == 0 {
			continue
		}
		fmt.Fprintf(w, "## Slow consumer (%d ms pause every 1000 msgs) vs fast, N=%d SIZE=%d (median)\n\n", c.SlowMS, c.N, c.Size)
		fmt.Fprintln(w, "| path | fast wall ms | slow wall ms | fast peak RSS MB | slow peak RSS MB | slow ÷ fast peak RSS |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
		for _, impl := range []string{implTS, implGo, implGoAlt} {
			fast, slow := pick(recs, c.FastLabel, impl), pick(recs, c.Label, impl)
			if len(fast.recs) == 0 || len(slow.recs) == 0 {
				continue
			}
			fp, _ := fast.med(peakRSS)
			sp, _ := slow.med(peakRSS)
			desc := implDesc[impl]
			if impl == implGoAlt {
				desc = "Go claude.Query, " + slow.recs[0].Note
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.2f× |\n", desc, num(fast, wallMS, 0, 1), num(slow, wallMS, 0, 1),
				num(fast, peakRSS, 1, 1), num(slow, peakRSS, 1, 1), sp/fp)
		}
		fmt.Fprintln(w)
	}
}

func writeTargets(w io.Writer, recs []record) {
	fmt.Fprintln(w, "## Targets")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | path | measured | met? |")
	fmt.Fprintln(w, "|---|---|---:|---|")
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**NOT met**"
	}
	for _, impl := range []string{implGo, implGoAlt} {
		if len(pick(recs, caseSmall, impl).recs)+len(pick(recs, caseLine50, impl).recs) == 0 {
			continue
		}
		desc := "Go claude.Query"
		if impl == implGoAlt {
			for _, r := range recs {
				if r.Impl == implGoAlt {
					desc += ", " + r.Note
					break
				}
			}
		}
		if g, ok := pick(recs, caseSmall, impl).med(msgsPerS); ok {
			if ts, ok := pick(recs, caseSmall, implTS).med(msgsPerS); ok {
				r := g / ts
				fmt.Fprintf(w, "| %s: msgs/s ≥ %.1f× TS SDK | %s | %.2f× (%s vs %s msgs/s) | %s |\n", caseSmall, targetVsTS, desc, r, fmtNum(g, 0), fmtNum(ts, 0), verdict(r >= targetVsTS))
			}
			if fl, ok := pick(recs, caseSmall, implDevnull).med(msgsPerS); ok {
				r := g / fl
				fmt.Fprintf(w, "| %s: msgs/s ≥ %.1f× fake → /dev/null | %s | %.2f× (%s vs %s msgs/s) | %s |\n", caseSmall, targetVsFloor, desc, r, fmtNum(g, 0), fmtNum(fl, 0), verdict(r >= targetVsFloor))
			}
		}
		if d, ok := pick(recs, caseLine50, impl).med(perLine); ok {
			delta, _ := pick(recs, caseLine50, impl).med(deltaRSS)
			fmt.Fprintf(w, "| %s: (peak RSS − RSS before query) ≤ %.1f× line | %s | %.2f× (%.1f MiB for a %.1f MiB line) | %s |\n",
				caseLine50, targetLineMemory, desc, d, delta, float64(line50Bytes)/(1<<20), verdict(d <= targetLineMemory))
		}
		for _, c := range perfCases {
			if c.SlowMS == 0 {
				continue
			}
			fast, slow := pick(recs, c.FastLabel, impl), pick(recs, c.Label, impl)
			fp, ok1 := fast.med(peakRSS)
			sp, ok2 := slow.med(peakRSS)
			if ok1 && ok2 {
				// RSS moves by a few hundred KiB between runs of the same
				// case; a difference inside that spread is not "higher".
				tol := max(fast.spread(peakRSS), slow.spread(peakRSS))
				fmt.Fprintf(w, "| slow consumer: peak RSS ≤ fast consumer's (N=%d), within run-to-run spread | %s | %.2f× (%.1f vs %.1f MiB: %+.1f MiB; spread of either case over its runs %.1f MiB) | %s |\n",
					c.N, desc, sp/fp, sp, fp, sp-fp, tol, verdict(sp-fp <= tol))
			}
		}
	}
	fmt.Fprintln(w)
}

// writeWholeProcesses compares `tether run --json` with the SDK consumers
// as whole processes. tether's wall is its process's, start to exit; the
// SDK rows' wall_ms starts at query() inside a process already running,
// which for the TS SDK leaves node's start and the SDK's import out. Here
// every row is a process from spawn to exit, as a user runs it.
func writeWholeProcesses(w io.Writer, recs []record) {
	tether := pick(recs, caseSmall, implTetherJSON)
	ts := pick(recs, caseSmall, implTS)
	if len(tether.recs) == 0 || len(ts.recs) == 0 {
		return
	}
	fmt.Fprintf(w, "## `tether run --json` against the SDKs, %s (medians)\n\n", caseSmall)
	fmt.Fprintln(w, "| path | query() → end ms | whole process ms | msgs/s, whole process | ratio vs TS SDK, whole processes | ratio vs TS SDK's query() alone |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	tsWall, _ := ts.med(procWall)
	tsQuery, _ := ts.med(wallMS)
	for _, impl := range []string{implTS, implGo, implTetherJSON} {
		s := pick(recs, caseSmall, impl)
		wall, ok := s.med(procWall)
		if !ok {
			continue
		}
		msgs, _ := s.med(messages)
		query, vsTS, vsQuery := num(s, wallMS, 0, 1), "–", "–"
		if impl != implTS {
			vsTS = fmt.Sprintf("%.2f×", tsWall/wall)
			own, _ := s.med(wallMS)
			vsQuery = fmt.Sprintf("%.2f×", tsQuery/own)
		}
		if impl == implTetherJSON {
			query = "–"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", implDesc[impl], query, fmtNum(wall, 0), fmtNum(msgs/wall*1000, 0), vsTS, vsQuery)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "whole process: from spawning the consumer to its exit (node's start and the SDK's import count for the TS SDK,")
	fmt.Fprintln(w, "as the Go binary's start does for the Go rows). `tether run` has no query() inside a running process: its last")
	fmt.Fprintln(w, "column sets its whole process against the TS SDK's query() alone.")
	fmt.Fprintln(w)
}

func writeRobust(w io.Writer, recs []record) {
	fmt.Fprintln(w, "## Robustness probes (one run each, hard timeout "+probeTimeout+")")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| probe | SDK | ok | msgs delivered | by type | what the SDK surfaced | lines skipped | hung | result at ms | wall ms | peak RSS MB | exit |")
	fmt.Fprintln(w, "|---|---|---|---:|---|---|---:|---|---:|---:|---:|---|")
	for _, r := range recs {
		if r.Rep != 0 {
			continue
		}
		sdk := "TS"
		if r.Impl == implGo {
			sdk = "Go"
			if r.Note != "" {
				sdk += " (" + r.Note + ")"
			}
		}
		var bt []string
		for k, v := range r.ByType {
			bt = append(bt, fmt.Sprintf("%s:%d", k, v))
		}
		slices.Sort(bt)
		var what string
		switch {
		case r.Error != nil:
			what = r.Error.Name + ": " + r.Error.Message
		case r.ProcessDied:
			var ls []string
			for l := range strings.Lines(r.StderrTail) {
				if strings.Contains(l, "Error") || strings.Contains(l, "at ") || strings.Contains(l, "killed") {
					ls = append(ls, strings.TrimSpace(l))
				}
			}
			if len(ls) > 2 {
				ls = ls[:2]
			}
			what = "PROCESS DIED: " + strings.Join(ls, " / ")
		case r.Result != nil:
			what = "result " + r.Result.Subtype
			if r.Impl == implGo {
				what += ", no error"
			}
		default:
			what = "iterator ended, no result, no error"
		}
		if r.Impl == implGo && len(r.LineErrors) > 0 {
			what += "; OnLineError: " + r.LineErrors[0]
		}
		what = strings.NewReplacer("|", "\\|", "\n", " ").Replace(truncate(what, 260))
		hung := "no"
		if r.Hung {
			hung = "YES"
			if r.TimeoutMS != nil {
				hung = fmt.Sprintf("YES (deadline %s ms)", fmtNum(*r.TimeoutMS, 0))
			}
		} else if r.StillAlive {
			hung = "process lingered"
		}
		ok := "no"
		if r.OK {
			ok = "yes"
		}
		skipped := "–"
		if r.LinesSkipped != nil {
			skipped = fmtNum(*r.LinesSkipped, 0)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n",
			strings.ReplaceAll(r.Label, "|", "\\|"), sdk, ok, ptr(r.Messages, 0), strings.Join(bt, " "), what, skipped, hung,
			ptr(r.ResultAtMS, 0), ptr(r.WallMS, 0), ptr(r.PeakRSSMB, 0), r.ExitCode)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Go: `claude.Query` with default options except where noted; \"what the SDK surfaced\" is the error yielded by the iterator")
	fmt.Fprintln(w, "(Go type, then text) and the first `Options.OnLineError` report; \"result at ms\" is when the result message was")
	fmt.Fprintln(w, "delivered, \"wall ms\" when the iterator ended (child reaped). TS: consume.mjs through the sh wrapper, --timeout 20000.")
	fmt.Fprintln(w)
}

func num(s stats, get func(record) *float64, dec int, scale float64) string {
	v, ok := s.med(get)
	if !ok {
		return "–"
	}
	return fmtNum(v*scale, dec)
}

func numX(s stats, get func(record) *float64) string {
	v, ok := s.med(get)
	if !ok {
		return "–"
	}
	return fmt.Sprintf("**%.2f×**", v)
}

func ptr(p *float64, dec int) string {
	if p == nil {
		return "–"
	}
	return fmtNum(*p, dec)
}

// fmtNum formats with thousands separators, like toLocaleString('en-US').
func fmtNum(x float64, dec int) string {
	s := strconv.FormatFloat(math.Abs(x), 'f', dec, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if x < 0 {
		b.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

// shortPath shows a path below the working directory relative to it, so a
// recorded report names no directory of the machine it ran on.
func shortPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
