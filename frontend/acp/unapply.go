package acp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrDiff matches a *DiffError.
var ErrDiff = errors.New("acp: the diff does not apply")

// DiffError says why a unified diff could not be taken back.
type DiffError struct{ Reason string }

func (e *DiffError) Error() string        { return "acp: the diff does not apply: " + e.Reason }
func (e *DiffError) Is(target error) bool { return target == ErrDiff }

type hunk struct {
	newStart  int // 1-based line of the new text
	old, next []string
}

// Unapply takes a unified diff back from the text it produced: the old
// text, for ACP's oldText, from the new one the workspace holds.
func Unapply(newText, diff string) (string, error) {
	hunks, err := parseHunks(diff)
	if err != nil {
		return "", err
	}
	lines := strings.SplitAfter(newText, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i := len(hunks) - 1; i >= 0; i-- {
		h := hunks[i]
		start := h.newStart - 1
		if len(h.next) == 0 {
			start = h.newStart // an insertion point: after line newStart
		}
		if start < 0 || start+len(h.next) > len(lines) {
			return "", &DiffError{Reason: fmt.Sprintf("hunk at +%d is past the file's end", h.newStart)}
		}
		for j, l := range h.next {
			if strings.TrimSuffix(lines[start+j], "\n") != l {
				return "", &DiffError{Reason: fmt.Sprintf("line %d differs from the diff", start+j+1)}
			}
		}
		old := make([]string, len(h.old))
		for j, l := range h.old {
			old[j] = l + "\n"
		}
		lines = append(lines[:start], append(old, lines[start+len(h.next):]...)...)
	}
	return strings.Join(lines, ""), nil
}

func parseHunks(diff string) ([]hunk, error) {
	var hunks []hunk
	var cur *hunk
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			start, err := newStart(l)
			if err != nil {
				return nil, err
			}
			hunks = append(hunks, hunk{newStart: start})
			cur = &hunks[len(hunks)-1]
		case cur == nil || strings.HasPrefix(l, `\`):
		case strings.HasPrefix(l, "+"):
			cur.next = append(cur.next, l[1:])
		case strings.HasPrefix(l, "-"):
			cur.old = append(cur.old, l[1:])
		case strings.HasPrefix(l, " "):
			cur.old, cur.next = append(cur.old, l[1:]), append(cur.next, l[1:])
		}
	}
	if len(hunks) == 0 {
		return nil, &DiffError{Reason: "no hunk"}
	}
	return hunks, nil
}

// newStart reads c of "@@ -a,b +c,d @@".
func newStart(header string) (int, error) {
	fields := strings.Fields(header)
	if len(fields) < 3 || !strings.HasPrefix(fields[2], "+") {
		return 0, &DiffError{Reason: fmt.Sprintf("bad hunk header %q", header)}
	}
	n, _, _ := strings.Cut(fields[2][1:], ",")
	start, err := strconv.Atoi(n)
	if err != nil || start < 0 {
		return 0, &DiffError{Reason: fmt.Sprintf("bad hunk header %q", header)}
	}
	return start, nil
}
