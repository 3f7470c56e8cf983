package fakehttp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrorTrigger is the trigger word that takes an HTTP status after it
// (ERROR_500): it counts only where a 4xx or 5xx status follows.
const ErrorTrigger = "ERROR_"

// FirstTrigger finds the earliest of the trigger words in a prompt, and
// the rest of its line: how the fakes pick a scenario.
func FirstTrigger(text string, words ...string) (kw, rest string, ok bool) {
	best := -1
	for _, w := range words {
		at := indexTrigger(text, w)
		if at >= 0 && (best < 0 || at < best) {
			best, kw = at, w
		}
	}
	if best < 0 {
		return "", "", false
	}
	rest, _, _ = strings.Cut(text[best+len(kw):], "\n")
	return kw, rest, true
}

// indexTrigger is strings.Index, except that ErrorTrigger only counts when
// an error status (4xx or 5xx) follows it.
func indexTrigger(text, kw string) int {
	if kw != ErrorTrigger {
		return strings.Index(text, kw)
	}
	for off := 0; ; {
		i := strings.Index(text[off:], kw)
		if i < 0 {
			return -1
		}
		at := off + i
		if code, err := strconv.Atoi(text[at+len(kw) : min(at+len(kw)+3, len(text))]); err == nil && code >= 400 && code <= 599 {
			return at
		}
		off = at + len(kw)
	}
}

// WriteJSON answers with v as JSON and status.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return fmt.Errorf("encode response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write response: %w", err)
	}
	return nil
}

// Pause waits d, or less if ctx ends first (client gone or server
// closing).
func Pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stream stopped: %w", context.Cause(ctx))
	}
}

// Split cuts s into pieces of at most n runes, never inside a rune. An
// empty s gives one empty piece, so every streamed text carries at least
// one delta.
func Split(s string, n int) []string {
	if s == "" || n <= 0 {
		return []string{s}
	}
	var out []string
	for s != "" {
		end, runes := 0, 0
		for end < len(s) && runes < n {
			_, size := utf8.DecodeRuneInString(s[end:])
			end += size
			runes++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}
