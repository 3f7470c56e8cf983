package runview

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// run is one Run: the screen and the parts that share it.
type run struct {
	cfg   Config
	scr   *screen
	st    style
	view  view
	intr  *interrupter
	appr  *approver
	start time.Time
}

// Run starts a session, sends cfg.Prompt as one turn, shows it until its
// result and returns the exit code: ExitOK, ExitFailed or ExitCancelled.
// Every goroutine it starts has ended when it returns, but for one case: a
// read of cfg.In for a question that was withdrawn, when In cannot be
// given a read deadline; it ends with the process (or the next line).
func Run(ctx context.Context, cfg Config) int {
	cfg = cfg.withDefaults()
	if cfg.Driver != nil {
		return runAgent(ctx, cfg)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := newRun(cfg, cancel)
	if cfg.Raw && !cfg.OutTerminal {
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

func newRun(cfg Config, cancel context.CancelFunc) *run {
	cwd := workDir(cfg.Options.Cwd)
	st := style{cfg.Color}
	scr := newScreen(cfg.Out, cfg.Err, cfg.OutTerminal, cfg.ErrTerminal && !cfg.Raw)
	scr.plainErr = cfg.Color && !cfg.ErrTerminal
	r := &run{cfg: cfg, scr: scr, st: st, start: cfg.Now()}
	var shown *shownTools
	if cfg.Raw {
		r.view = rawView{scr}
	} else {
		shown = newShownTools()
		r.view = newHumanView(scr, st, cwd, shown)
	}
	r.intr = newInterrupter(cancel, func(s string) { scr.note(st.yellow(s)) })
	r.appr = newApprover(cfg, scr, cwd, shown)
	return r
}

// workDir is the directory the agent works in, for showing paths
// relative to it.
func workDir(cwd string) string {
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(cwd); err == nil {
		return abs
	}
	return cwd
}

func (r *run) session(ctx context.Context) int {
	r.scr.wait("starting claude…")
	client, err := claude.Connect(ctx, r.options())
	if err != nil {
		return r.failed(err)
	}
	defer func() {
		r.intr.settle()
		_ = client.Close() // also withdraws a question still up
		r.appr.lines.close()
	}()
	r.intr.attach(client)
	if err := client.Send(ctx, r.userInput()); err != nil {
		return r.failed(err)
	}
	r.scr.wait("thinking…")
	res, err := r.receive(ctx, client)
	if err != nil || r.intr.cancelledRun() {
		return r.failed(err)
	}
	r.view.finish(res, r.intr.requested(), r.cfg.Now().Sub(r.start))
	return exitFor(res)
}

// options are the caller's, plus what the console needs: streamed text,
// the approval callback and, when verbose, logging on the screen.
func (r *run) options() claude.Options {
	o := r.cfg.Options
	o.IncludePartialMessages = true
	o.CanUseTool = r.appr.decide
	if r.cfg.AskEveryTool {
		o = AskEveryTool(o)
	}
	if r.cfg.Verbose {
		o = Verbose(o, r.scr)
	}
	return o
}

// Verbose logs the CLI's stderr and the output lines the SDK skips to w.
func Verbose(o claude.Options, w io.Writer) claude.Options {
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.Logger = log
	o.Stderr = func(line string) { log.Info("claude stderr", "line", line) }
	o.OnLineError = func(err error) { log.Warn("skipped a line of claude output", "err", err) }
	return o
}

// receive shows messages up to the turn's result.
func (r *run) receive(ctx context.Context, c *claude.Client) (*claude.ResultMessage, error) {
	for msg, err := range c.Receive(ctx) {
		if err != nil {
			return nil, err
		}
		r.view.message(msg)
		if res, ok := msg.(*claude.ResultMessage); ok {
			return res, nil
		}
	}
	return nil, claude.ErrNoResult // Receive yields it itself; kept for the compiler
}

// failed reports a run that ended without a result to show.
func (r *run) failed(err error) int {
	if r.intr.cancelledRun() {
		r.scr.note(r.st.yellow("⏹ cancelled"))
		return ExitCancelled
	}
	msg := "✗ " + err.Error()
	if errors.Is(err, claude.ErrCLINotFound) {
		msg += "\n  (pass --cli PATH, or try tether run --mock: a built-in stand-in, no CLI or API key needed)"
	}
	r.scr.note(r.st.red(msg))
	return ExitFailed
}

// AskEveryTool has the CLI send every tool call to the approval callback,
// the ones it would run without asking included (see claude.AskEveryTool).
func AskEveryTool(o claude.Options) claude.Options {
	o.Hooks = maps.Clone(o.Hooks)
	if o.Hooks == nil {
		o.Hooks = map[string][]claude.HookMatcher{}
	}
	every := claude.HookMatcher{Hooks: []claude.HookFunc{claude.AskEveryTool}}
	o.Hooks[cc.HookPreToolUse] = append([]claude.HookMatcher{every}, o.Hooks[cc.HookPreToolUse]...)
	return o
}

// userInput is the prompt as Claude Code's user message: the images
// first, then the text, the order Anthropic advises.
func (r *run) userInput() claude.UserInput {
	content := make(claude.Content, 0, len(r.cfg.Images)+1)
	for _, img := range r.cfg.Images {
		content = append(content, cc.Base64Image(img.MediaType, img.Data))
	}
	return claude.UserInput{Content: append(content, claude.TextBlock{Text: r.cfg.Prompt})}
}
