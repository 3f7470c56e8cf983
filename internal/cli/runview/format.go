package runview

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/cli/eventview"
)

// How much of a command, pattern or result line one line shows.
const (
	clipSummary = eventview.ClipSummary
	clipResult  = eventview.ClipResult
)

// style adds ANSI styling when on.
type style struct{ on bool }

func (s style) wrap(code, t string) string {
	if !s.on || t == "" {
		return t
	}
	return "\x1b[" + code + "m" + t + "\x1b[0m"
}

func (s style) dim(t string) string    { return s.wrap("2", t) }
func (s style) red(t string) string    { return s.wrap("31", t) }
func (s style) green(t string) string  { return s.wrap("32", t) }
func (s style) yellow(t string) string { return s.wrap("33", t) }

// toolSummary names a tool call in a few words (see eventview.ToolSummary).
func toolSummary(name string, input json.RawMessage, cwd string) string {
	return eventview.ToolSummary(name, input, cwd)
}

// firstLine returns the first non-blank line of s, clipped to max runes,
// and how many more lines follow it.
func firstLine(s string, max int) (line string, more int) { return eventview.FirstLine(s, max) }

// toolResultText is a tool result as one line's worth of text, without the
// CLI's <tool_use_error> wrapper.
func toolResultText(b claude.ToolResultBlock) string {
	t := b.ContentText()
	t = strings.ReplaceAll(t, "<tool_use_error>", "")
	return strings.ReplaceAll(t, "</tool_use_error>", "")
}

// tokens shows a token count as 340, 1.2k or 3.4M.
func tokens(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e3)) + "k"
	default:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e6)) + "M"
	}
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// cost shows dollars with four decimals below $1, two above.
func cost(usd float64) string {
	if usd < 1 {
		return fmt.Sprintf("$%.4f", usd)
	}
	return fmt.Sprintf("$%.2f", usd)
}

// duration shows 0.4s, 3.4s or 2m05s.
func duration(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// inputTokens counts every input token, cached or not: with prompt caching
// input_tokens alone is a small fraction of what the model read.
func inputTokens(u claude.Usage) int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}
