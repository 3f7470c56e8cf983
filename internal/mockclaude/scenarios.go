package mockclaude

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// fillUnit repeats to make filler text; it needs no JSON escaping.
const fillUnit = "The quick brown fox jumps over the lazy dog 0123456789. "

// scenario is what a named behaviour changes; the protocol plumbing is
// shared.
type scenario struct {
	// turn answers one user message, after system/init was written. It
	// returns nil after writing the result, errInterrupted (the runner writes
	// the interrupt tail), an exitCode to end the process, or a write error.
	turn func(t *turn) error
	// atEOF runs when stdin has ended and no turn is queued; nil exits 0.
	atEOF func(ctx context.Context, s *session) int
	// ignoreInit leaves initialize unanswered.
	ignoreInit bool
}

// scenarioNames lists every scenario, for errors and docs.
func scenarioNames() []string {
	return []string{
		"demo", "text", "slow", "crash-midline", "crash", "huge-line", "junk", "linger",
		"close-stdout", "no-init", "exit0-noresult", "hook", "mcp",
	}
}

func lookupScenario(name string) (scenario, bool) {
	switch name {
	case "demo":
		return scenario{turn: demoTurn}, true
	case "text":
		return scenario{turn: textTurn}, true
	case "slow":
		return scenario{turn: slowTurn}, true
	case "crash-midline":
		return scenario{turn: crashMidlineTurn}, true
	case "crash":
		return scenario{turn: crashTurn}, true
	case "huge-line":
		return scenario{turn: hugeLineTurn}, true
	case "junk":
		return scenario{turn: junkTurn}, true
	case "linger":
		return scenario{turn: textTurn, atEOF: lingerAtEOF}, true
	case "close-stdout":
		return scenario{turn: textTurn, atEOF: closeStdoutAtEOF}, true
	case "no-init":
		return scenario{turn: textTurn, ignoreInit: true}, true
	case "exit0-noresult":
		return scenario{turn: exit0NoResultTurn}, true
	case "hook":
		return scenario{turn: hookTurn}, true
	case "mcp":
		return scenario{turn: mcpTurn}, true
	}
	return scenario{}, false
}

// textTurn: N assistant messages (TETHER_MOCK_N) of Size bytes each
// (TETHER_MOCK_SIZE), default one "Hello from the mock.", then the result.
func textTurn(t *turn) error {
	n := max(t.s.cfg.N, 1)
	text := "Hello from the mock."
	if t.s.cfg.Size > 0 {
		text = filler(int(t.s.cfg.Size))
	}
	var last string
	for range n {
		var err error
		if last, err = t.reply([]string{text}); err != nil {
			return err
		}
	}
	return t.success(last)
}

// slowTurn streams 50 chunks with Delay (default 50ms) between them, so an
// interrupt can land mid-stream.
func slowTurn(t *turn) error {
	if t.delay <= 0 {
		t.delay = 50 * time.Millisecond
	}
	chunks := make([]string, 50)
	for i := range chunks {
		chunks[i] = "tick " + strconv.Itoa(i+1) + " "
	}
	text, err := t.reply(chunks)
	if err != nil {
		return err
	}
	return t.success(text)
}

// crashMidlineTurn writes half a JSON line (no newline) and exits 1.
func crashMidlineTurn(t *turn) error {
	line := `{"type":"assistant","message":{"id":"msg_mock_crash","type":"message","role":"assistant","model":"` + t.s.currentModel() + `","content":[{"type":"text","text":"this line never ends`
	if err := t.s.out.raw([]byte(line)); err != nil {
		return err
	}
	t.s.notes.notef("simulated crash")
	return exitCode(1)
}

// crashTurn writes one assistant message and exits 3 with no result.
func crashTurn(t *turn) error {
	if _, err := t.reply([]string{"About to crash."}); err != nil {
		return err
	}
	t.s.notes.notef("simulated crash after one assistant message")
	return exitCode(3)
}

// exit0NoResultTurn writes one assistant message and exits 0 with no result.
func exit0NoResultTurn(t *turn) error {
	if _, err := t.reply([]string{"Leaving without a result."}); err != nil {
		return err
	}
	t.s.notes.notef("exiting 0 without a result")
	return exitCode(0)
}

// junkLines are written between real messages by the "junk" scenario.
func junkLines() []string {
	return []string{
		"mock: this line is not JSON",
		"",
		"\x1b[33m[SandboxDebug] an ANSI-coloured log line\x1b[0m",
		"   ",
		"null",
		"42",
		"[1]",
		`"s"`,
		"{}",
		`{"type":"bogus_future_type","x":1}`,
	}
}

func writeJunk(t *turn) error {
	for _, l := range junkLines() {
		if err := t.s.out.raw([]byte(l + "\n")); err != nil {
			return err
		}
	}
	return nil
}

// junkTurn interleaves junk with the real messages, then a normal result.
func junkTurn(t *turn) error {
	if err := writeJunk(t); err != nil {
		return err
	}
	text, err := t.reply([]string{"Hello through the junk."})
	if err != nil {
		return err
	}
	if err := writeJunk(t); err != nil {
		return err
	}
	return t.success(text)
}

// lingerAtEOF ignores stdin EOF and stays until ctx is done.
func lingerAtEOF(ctx context.Context, s *session) int {
	s.notes.notef("linger: stdin closed, staying alive until killed")
	<-ctx.Done()
	return exitSIGTERM
}

// closeStdoutAtEOF closes stdout at stdin EOF and stays until ctx is done.
func closeStdoutAtEOF(ctx context.Context, s *session) int {
	s.out.stopped.Store(true)
	if s.cfg.CloseStdout != nil {
		if err := s.cfg.CloseStdout(); err != nil {
			s.notes.notef("closing stdout: %v", err)
		}
	}
	s.notes.notef("close-stdout: stdout closed, staying alive until killed")
	<-ctx.Done()
	return exitSIGTERM
}

// filler returns n bytes of readable ASCII text.
func filler(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat(fillUnit, n/len(fillUnit)+1)[:n]
}
