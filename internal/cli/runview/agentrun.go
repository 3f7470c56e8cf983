package runview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/cli/eventview"
)

// agentRun is one Run through an agent.Driver: canonical events, shown
// live, as JSON lines, or as the agent's own payloads.
type agentRun struct {
	cfg     Config
	scr     *screen
	st      style
	live    *eventview.Live // nil with JSON or Raw
	intr    *interrupter
	appr    *agentApprover
	start   time.Time
	lastRaw []byte // the raw payload printed last: events mapped from one line share it
}

// turnOutcome is what the run learned of its turn.
type turnOutcome struct {
	end   *agent.Event // turn.completed
	ended *agent.Event // session.ended before the turn completed
	usage *agent.Usage
	err   error // reading the events failed
}

func runAgent(ctx context.Context, cfg Config) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := newAgentRun(cfg, cancel)
	if (cfg.JSON || cfg.Raw) && !cfg.OutTerminal {
		r.scr.bufferOut()
	}
	defer r.scr.close()
	var spin *spinner
	if r.scr.spin.enabled {
		spin = startSpinner(r.scr, cfg.SpinnerEvery)
	}
	defer spin.stop()
	defer r.intr.watch(ctx, cfg.Interrupts)()
	return r.session(ctx)
}

func newAgentRun(cfg Config, cancel context.CancelFunc) *agentRun {
	cfg.Start.Workspace = workDir(cfg.Start.Workspace)
	st := style{cfg.Color}
	quiet := cfg.JSON || cfg.Raw
	scr := newScreen(cfg.Out, cfg.Err, cfg.OutTerminal, cfg.ErrTerminal && !quiet)
	scr.plainErr = cfg.Color && !cfg.ErrTerminal
	r := &agentRun{cfg: cfg, scr: scr, st: st, start: cfg.Now()}
	if !quiet {
		r.live = eventview.NewLive(screenWriter{scr}, eventview.Style{On: cfg.Color}, cfg.Start.Workspace)
	}
	r.intr = newInterrupter(cancel, func(s string) { scr.note(st.yellow(s)) })
	r.appr = newAgentApprover(cfg, scr)
	return r
}

// screenWriter is the screen as an eventview.Writer.
type screenWriter struct{ scr *screen }

func (w screenWriter) Text(t string) { w.scr.text(t) }
func (w screenWriter) Line(t string) { w.scr.line(t) }
func (w screenWriter) Note(t string) { w.scr.note(t) }

func (r *agentRun) session(ctx context.Context) int {
	if err := agent.CheckImages(r.cfg.Driver.Name(), r.cfg.Driver.Capabilities(), agent.Prompt{Images: r.cfg.Images}); err != nil {
		return r.failed(err) // before its agent starts
	}
	r.scr.wait("starting " + r.cfg.Driver.Name() + "…")
	sess, err := r.cfg.Driver.Start(ctx, r.cfg.Start)
	if err != nil {
		return r.failed(err)
	}
	r.intr.attach(sess)
	out := r.follow(ctx, sess)
	if r.intr.cancelledRun() {
		return r.failed(ctx.Err())
	}
	switch {
	case out.end != nil:
		r.finish(out, sess.NativeID())
		if out.end.Turn.Status == agent.TurnCompleted {
			return ExitOK
		}
		return ExitFailed
	case out.err != nil:
		return r.failed(out.err)
	case out.ended != nil:
		return r.failed(sessionEnded(out.ended))
	}
	return r.failed(errors.New("the session's events ended before its turn"))
}

// follow prompts and shows the session's events until its turn ends;
// then it closes the session and shows the rest, up to session.ended.
// When it returns the session is closed and every question is down.
func (r *agentRun) follow(ctx context.Context, sess agent.Session) turnOutcome {
	closed := make(chan struct{})
	closing := false
	closeSession := func() {
		if !closing {
			closing = true
			go func() {
				defer close(closed)
				r.intr.settle()
				_ = sess.Close()
			}()
		}
	}
	defer func() {
		closeSession()
		<-closed
		r.appr.stop()
	}()
	var out turnOutcome
	if err := sess.Prompt(ctx, agent.Prompt{Text: r.cfg.Prompt, Images: r.cfg.Images}); err != nil {
		out.err = fmt.Errorf("prompt: %w", err)
		return out
	}
	r.scr.wait("thinking…")
	for ev, err := range sess.Events(ctx) {
		if err != nil {
			out.err = err
			break
		}
		r.show(ev)
		switch ev.Kind {
		case agent.KindApprovalRequested:
			r.appr.requested(ctx, sess, *ev.Approval)
		case agent.KindApprovalResolved:
			r.appr.resolved(ev.Resolution.ApprovalID)
		case agent.KindUsage:
			out.usage = ev.Usage
		case agent.KindTurnCompleted:
			if out.end == nil {
				end := ev // a copy: taking ev's address would move every event to the heap
				out.end = &end
				r.appr.stop() // nothing is left to decide
				closeSession()
			}
		case agent.KindSessionEnded:
			if out.end == nil {
				ended := ev
				out.ended = &ended
			}
		}
	}
	return out
}

// show prints one event as the output mode says.
func (r *agentRun) show(ev agent.Event) {
	switch {
	case r.cfg.JSON:
		if err := r.scr.rawAppend(ev.AppendJSON); err != nil {
			r.scr.note(r.st.red("✗ " + err.Error()))
		}
	case r.cfg.Raw:
		if len(ev.Raw) == 0 || bytes.Equal(ev.Raw, r.lastRaw) {
			return
		}
		r.lastRaw = ev.Raw
		var line bytes.Buffer
		if json.Compact(&line, ev.Raw) != nil {
			line.Reset()
			line.Write(bytes.ReplaceAll(ev.Raw, []byte("\n"), []byte(" ")))
		}
		r.scr.raw(line.Bytes())
	default:
		r.live.Show(ev)
		r.scr.wait(r.live.Waiting())
	}
}

// finish prints the summary line (not with JSON or Raw: the events say
// it all).
func (r *agentRun) finish(out turnOutcome, nativeID string) {
	if r.live == nil {
		return
	}
	if r.live.Printed() {
		r.scr.line("")
	}
	r.scr.line(agentSummary(out, r.intr.requested(), r.cfg.Now().Sub(r.start), nativeID, r.st))
}

// agentSummary is the run's last line: outcome, turns, tokens, cost
// (where the agent reports one), time and the native session id (what
// --resume takes).
func agentSummary(out turnOutcome, interrupted bool, elapsed time.Duration, nativeID string, st style) string {
	end := out.end
	head := st.green("✓") + " "
	switch {
	case end.Turn.Status == agent.TurnInterrupted || (interrupted && end.Turn.Status != agent.TurnCompleted):
		head = st.yellow("⏹ interrupted") + " · "
	case end.Turn.Status == agent.TurnFailed:
		head = st.red("✗ "+turnFailure(end.Error)) + " · "
	}
	parts := []string{head + plural(1, "turn")}
	usage := end.Usage
	if usage == nil {
		usage = out.usage
	}
	if usage != nil {
		parts = append(parts, tokens(usage.InputTokens+usage.CacheReadTokens+usage.CacheWriteTokens)+" in / "+tokens(usage.OutputTokens)+" out")
		if usage.CostUSD > 0 {
			parts = append(parts, cost(usage.CostUSD))
		}
	}
	parts = append(parts, duration(elapsed))
	if nativeID != "" {
		parts = append(parts, "session "+nativeID)
	}
	return strings.Join(parts, " · ")
}

// turnFailure says why a turn failed, in one short line.
func turnFailure(e *agent.Error) string {
	if e == nil {
		return "failed"
	}
	line, _ := firstLine(e.Message, clipSummary)
	if e.Status != 0 {
		return fmt.Sprintf("%s %d: %s", e.Code, e.Status, line)
	}
	return string(e.Code) + ": " + line
}

func sessionEnded(ev *agent.Event) error {
	if ev.Error != nil {
		return fmt.Errorf("the session ended (%s): %s", ev.Session.Reason, ev.Error.Message)
	}
	return fmt.Errorf("the session ended (%s) before its turn did", ev.Session.Reason)
}

// failed reports a run that ended without a turn to sum up.
func (r *agentRun) failed(err error) int {
	if r.intr.cancelledRun() {
		r.scr.note(r.st.yellow("⏹ cancelled"))
		return ExitCancelled
	}
	msg := "✗ " + err.Error()
	if errors.Is(err, claude.ErrCLINotFound) {
		msg += "\n  (pass --cli PATH, or try tether run --agent mock: a built-in agent, no CLI or API key needed)"
	}
	r.scr.note(r.st.red(msg))
	return ExitFailed
}
