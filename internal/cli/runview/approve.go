package runview

import (
	"bufio"
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// Deny messages go back to the model as the tool's error result.
const (
	denyByFlag     = "denied by tether (--approve=deny)"
	denyByUser     = "the user denied this tool call"
	denyNoTerminal = "tether could not ask for approval: stdin is not a terminal (pass --approve=allow or --approve=deny)"
	denyNoAnswer   = "no answer to the approval question"
)

// maxAsks bounds how often one question is repeated after answers that
// are not y, a or n.
const maxAsks = 3

// approver answers the CLI's can_use_tool requests: by the --approve mode,
// or by asking the person, one question at a time.
type approver struct {
	mode        Approve
	interactive bool
	scr         *screen
	st          style
	cwd         string
	lines       *lineSource
	shown       *shownTools   // nil: no tool lines to wait for
	turn        chan struct{} // holds a token while a question is up

	mu     sync.Mutex
	always map[string]bool // tools the person allowed for the whole run
	warned bool            // the off-terminal note was shown
}

func newApprover(cfg Config, scr *screen, cwd string, shown *shownTools) *approver {
	return &approver{
		mode: cfg.Approve, interactive: cfg.InTerminal, scr: scr, st: style{cfg.Color}, cwd: cwd,
		lines: newLineSource(cfg.In), shown: shown, turn: make(chan struct{}, 1), always: map[string]bool{},
	}
}

// decide is the claude.Options.CanUseTool callback.
func (a *approver) decide(ctx context.Context, req claude.PermissionRequest) (claude.PermissionResult, error) {
	switch {
	case a.mode == ApproveAllow || a.remembered(req.ToolName):
		return claude.Allow{}, nil
	case a.mode == ApproveDeny:
		return claude.Deny{Message: denyByFlag}, nil
	case !a.interactive:
		a.warnOffTerminal(req)
		return claude.Deny{Message: denyNoTerminal}, nil
	}
	return a.ask(ctx, req)
}

func (a *approver) remembered(tool string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.always[tool]
}

func (a *approver) remember(tool string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.always[tool] = true
}

func (a *approver) warnOffTerminal(req claude.PermissionRequest) {
	a.mu.Lock()
	first := !a.warned
	a.warned = true
	a.mu.Unlock()
	if first {
		what := toolSummary(req.ToolName, req.Input, a.cwd)
		a.scr.note(a.st.yellow("! " + what + " needs approval, but stdin is not a terminal: denied. Pass --approve=allow to let tools run, or --approve=deny to silence this."))
	}
}

// ask puts the question to the person and waits for y, a or n. A question
// the CLI withdraws (ctx done) stops waiting; its answer, if typed later,
// goes to the next question.
func (a *approver) ask(ctx context.Context, req claude.PermissionRequest) (claude.PermissionResult, error) {
	select {
	case a.turn <- struct{}{}:
		defer func() { <-a.turn }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if a.remembered(req.ToolName) { // allowed "always" while we waited our turn
		return claude.Allow{}, nil
	}
	a.shown.wait(ctx, req.ToolUseID)
	question := "Allow " + toolSummary(req.ToolName, req.Input, a.cwd) + "? [y]es once / [a]lways / [n]o "
	for range maxAsks {
		release := a.scr.ask(a.st.yellow("? ") + question)
		answer, err := a.lines.next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				release(a.st.dim("(withdrawn)") + "\n")
				return nil, ctx.Err()
			}
			release("\n")
			return claude.Deny{Message: denyNoAnswer}, nil
		}
		release("")
		if res, ok := a.answer(req, answer); ok {
			return res, nil
		}
	}
	return claude.Deny{Message: denyNoAnswer}, nil
}

// answer reads y/yes, a/always or n/no/empty (the safe default).
func (a *approver) answer(req claude.PermissionRequest, answer string) (claude.PermissionResult, bool) {
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return claude.Allow{}, true
	case "a", "always":
		a.remember(req.ToolName)
		return claude.Allow{UpdatedPermissions: alwaysAllow(req.ToolName)}, true
	case "n", "no", "":
		return claude.Deny{Message: denyByUser}, true
	}
	return nil, false
}

// alwaysAllow is the rule that tells the CLI, too, to allow the tool for
// the rest of the session. It is the tool-wide rule the person agreed to,
// not the CLI's own suggestions, which may be broader (a mode switch).
func alwaysAllow(tool string) []claude.PermissionUpdate {
	return []claude.PermissionUpdate{{
		Type: "addRules", Rules: []cc.PermissionRule{{ToolName: tool}},
		Behavior: "allow", Destination: "session",
	}}
}

// lineSource reads answers one line at a time. A read runs on its own
// goroutine so a question can stop waiting; a read left in flight keeps
// its line for the next question.
type lineSource struct {
	in       io.Reader
	r        *bufio.Reader
	inFlight chan lineRead // nil when no read is running
}

type lineRead struct {
	line string
	err  error
}

func newLineSource(in io.Reader) *lineSource {
	return &lineSource{in: in, r: bufio.NewReader(in)}
}

// next returns the next line, or ctx's error if ctx ends first. Questions
// are serialised by the approver, so next is never called concurrently.
func (s *lineSource) next(ctx context.Context) (string, error) {
	if s.inFlight == nil {
		ch := make(chan lineRead, 1)
		s.inFlight = ch
		go func() {
			line, err := s.r.ReadString('\n')
			if err == io.EOF && line != "" {
				err = nil // a last line without a newline is still an answer
			}
			ch <- lineRead{line, err}
		}()
	}
	select {
	case got := <-s.inFlight:
		s.inFlight = nil
		return got.line, got.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// deadliner is an input whose blocked reads can be ended (an *os.File
// that the runtime polls, such as /dev/tty).
type deadliner interface {
	SetReadDeadline(time.Time) error
}

// close ends a read still in flight when the input allows it, and waits
// for it; otherwise the read is left to end with the process.
func (s *lineSource) close() {
	if s.inFlight == nil {
		return
	}
	d, ok := s.in.(deadliner)
	if !ok || d.SetReadDeadline(time.Now()) != nil {
		return
	}
	<-s.inFlight
	s.inFlight = nil
	_ = d.SetReadDeadline(time.Time{}) // the input outlives this run
}
