package eventview

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// How much of a command, pattern or result one line shows.
const (
	ClipSummary = 80
	ClipResult  = 100
)

// Style adds ANSI styling when On.
type Style struct{ On bool }

func (s Style) wrap(code, t string) string {
	if !s.On || t == "" {
		return t
	}
	return "\x1b[" + code + "m" + t + "\x1b[0m"
}

func (s Style) Dim(t string) string    { return s.wrap("2", t) }
func (s Style) Red(t string) string    { return s.wrap("31", t) }
func (s Style) Green(t string) string  { return s.wrap("32", t) }
func (s Style) Yellow(t string) string { return s.wrap("33", t) }

// ToolSummary names a tool call in a few words: the tool and the file,
// command, pattern, URL or query it works on.
func ToolSummary(name string, input json.RawMessage, cwd string) string {
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Command      string `json:"command"`
		Pattern      string `json:"pattern"`
		URL          string `json:"url"`
		Query        string `json:"query"`
	}
	_ = json.Unmarshal(input, &in) // a tool without these fields is shown by name
	switch {
	case in.FilePath != "":
		return name + " " + RelPath(in.FilePath, cwd)
	case in.NotebookPath != "":
		return name + " " + RelPath(in.NotebookPath, cwd)
	}
	for _, v := range []string{in.Command, in.Pattern, in.URL, in.Query} {
		if v != "" {
			return name + ": " + Clip(v)
		}
	}
	return name
}

// Clip is the first line of s within ClipSummary runes, with " …" when
// more follows.
func Clip(s string) string {
	line, more := FirstLine(s, ClipSummary)
	if more > 0 {
		line += " …"
	}
	return line
}

// RelPath shows p relative to cwd when it lies inside it.
func RelPath(p, cwd string) string {
	if cwd == "" || !filepath.IsAbs(p) {
		return p
	}
	rel, err := filepath.Rel(cwd, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return rel
}

// FirstLine returns the first non-blank line of s, clipped to max runes,
// and how many more lines follow it.
func FirstLine(s string, max int) (line string, more int) {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	line = strings.TrimSpace(lines[0])
	if r := []rune(line); len(r) > max {
		line = string(r[:max-1]) + "…"
	}
	return line, len(lines) - 1
}

// ResultLine is a tool's output as one line: its first line, and how
// many more there are.
func ResultLine(output string) string {
	line, more := FirstLine(output, ClipResult)
	if line == "" {
		line = "(no output)"
	}
	if more > 0 {
		line += fmt.Sprintf(" … +%d lines", more)
	}
	return line
}

// DiffStat counts a unified diff's added and removed lines.
func DiffStat(diff string) (added, removed int) {
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			removed++
		}
	}
	return added, removed
}
