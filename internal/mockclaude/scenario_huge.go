package mockclaude

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

const (
	defaultHugeSize = 50 << 20
	hugeMarker      = "@@mockclaude-huge-text@@" // never produced by filler
)

// hugeLineTurn writes one assistant message whose text is Size bytes
// (default 50 MiB), streamed to stdout in 64 KiB pieces from one reused
// buffer: the line is never built in memory. Then a normal result.
func hugeLineTurn(t *turn) error {
	size := t.s.cfg.Size
	if size <= 0 {
		size = defaultHugeSize
	}
	c, err := t.newCall()
	if err != nil {
		return err
	}
	c.partial = false // stream events would double the bytes; this is about one line
	// Encode the message once with a marker as its text and split around it.
	var enc bytes.Buffer
	msg := assistantMsg{Type: "assistant", Message: c.message([]any{textBlock{Type: "text", Text: hugeMarker}}), SessionID: t.s.sessionID, UUID: t.s.ids.uuid(), RequestID: c.requestID}
	if err := encodeLine(&enc, msg); err != nil {
		return err
	}
	head, tail, ok := strings.Cut(enc.String(), hugeMarker)
	if !ok {
		return fmt.Errorf("mockclaude: huge-line marker not found")
	}
	err = t.s.out.stream(func(w io.Writer) error {
		if _, err := io.WriteString(w, head); err != nil {
			return err
		}
		piece := []byte(strings.Repeat(fillUnit, (64<<10)/len(fillUnit)))
		for left := size; left > 0; {
			// Only a stopping process leaves half a line; an interrupt
			// waits for the line to end.
			if err := t.proc.Err(); err != nil {
				return err
			}
			n := min(left, int64(len(piece)))
			if _, err := w.Write(piece[:n]); err != nil {
				return err
			}
			left -= n
		}
		_, err := io.WriteString(w, tail)
		return err
	})
	if err != nil {
		return err
	}
	c.out = int(size / 4)
	if err := c.end("end_turn"); err != nil {
		return err
	}
	return t.success(fmt.Sprintf("huge-line: wrote an assistant text of %d bytes", size))
}
