package mock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
)

// The words in a prompt that change the script.
const (
	WordApproval = "REQUEST_APPROVAL"
	WordQuestion = "ASK_QUESTION"
	WordFail     = "FAIL_TURN"
	WordSlow     = "SLOW"
)

// ToolName is the tool the mock calls each turn.
const ToolName = "mock_search"

// errFailTurn ends a turn that FAIL_TURN fails.
var errFailTurn = errors.New("mock: the model API failed (FAIL_TURN)")

// turnRun is one turn's script as it runs.
type turnRun struct {
	s      *session
	n      int
	id     string
	prompt string
	ctx    context.Context
	cancel context.CancelCauseFunc
	start  time.Time

	// open are the items started and not completed, by id; on an
	// interrupt they complete failed.
	open  map[string]agent.Item
	order []string

	// Set on the turn's goroutine; steers under the session's lock.
	steers   []string
	outcomes []string // what approvals and questions decided, for the reply
	planOnly bool     // the session is in ModePlan
	model    string   // the model Configure set, for the reply to name
	// images are the prompt's, which the reply counts so a client sees
	// they arrived.
	images []agent.Image
}

func newTurn(s *session, n int, prompt string) *turnRun {
	ctx, cancel := context.WithCancelCause(s.ctx)
	return &turnRun{s: s, n: n, id: "turn-" + strconv.Itoa(n), prompt: prompt, ctx: ctx, cancel: cancel,
		start: s.d.cfg.Now(), open: map[string]agent.Item{}}
}

func (t *turnRun) event(k agent.Kind, set func(*agent.Event)) agent.Event {
	return t.s.event(k, func(e *agent.Event) {
		e.TurnID = t.id
		if set != nil {
			set(e)
		}
	})
}

func (t *turnRun) itemEvent(k agent.Kind, it agent.Item) agent.Event {
	it.MessageID = t.id + "/msg"
	if it.Type == agent.ItemUserMessage {
		it.MessageID = ""
	}
	return t.event(k, func(e *agent.Event) { e.Item = &it })
}

// emit queues events, then waits for room and for the pace; it fails
// once the turn's context has ended.
func (t *turnRun) emit(events ...agent.Event) error {
	if err := t.ctx.Err(); err != nil {
		return err
	}
	t.s.emitNow(events...)
	if err := t.s.out.WaitRoom(t.ctx); err != nil {
		return err
	}
	return t.pace()
}

func (t *turnRun) pace() error {
	if t.s.d.cfg.Pace <= 0 {
		return nil
	}
	select {
	case <-t.s.d.cfg.After(t.s.d.cfg.Pace):
		return nil
	case <-t.ctx.Done():
		return t.ctx.Err()
	}
}

func (t *turnRun) startItem(it agent.Item) error {
	it.Status = agent.ItemInProgress
	t.open[it.ID] = it
	t.order = append(t.order, it.ID)
	return t.emit(t.itemEvent(agent.KindItemStarted, it))
}

func (t *turnRun) delta(id string, f agent.Field, text string) error {
	if it, ok := t.open[id]; ok { // so an item cut short keeps what it streamed
		switch {
		case f == agent.FieldText:
			it.Text += text
		case f == agent.FieldOutput && it.Command != nil:
			c := *it.Command
			c.Output += text
			it.Command = &c
		}
		t.open[id] = it
	}
	return t.emit(t.event(agent.KindItemDelta, func(e *agent.Event) { e.Delta = &agent.Delta{ItemID: id, Field: f, Text: text} }))
}

func (t *turnRun) complete(it agent.Item) error {
	delete(t.open, it.ID)
	return t.emit(t.itemEvent(agent.KindItemCompleted, it))
}

func (t *turnRun) has(word string) bool { return strings.Contains(t.prompt, word) }

// run plays the script, then ends the turn as it went: completed, failed
// or interrupted.
func (t *turnRun) run() {
	defer t.s.wg.Done()
	defer t.cancel(nil)
	err := t.script()
	t.finish(err)
}

func (t *turnRun) script() error {
	steps := []func() error{t.reasoning, t.failure, t.question, t.plan, t.command, t.fileChange, t.toolCall}
	t.s.mu.Lock()
	t.planOnly, t.model = t.s.mode == ModePlan, ""
	if t.s.modelSet {
		t.model = t.s.conv.model
	}
	t.s.mu.Unlock()
	if t.planOnly {
		steps = []func() error{t.reasoning, t.failure, t.plan}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return t.reply()
}

func (t *turnRun) reasoning() error {
	it := agent.Item{ID: t.id + "/reasoning", Type: agent.ItemReasoning}
	if err := t.startItem(it); err != nil {
		return err
	}
	parts := []string{"The user wants a reply. ", "I will show one of each item."}
	for _, p := range parts {
		if err := t.delta(it.ID, agent.FieldText, p); err != nil {
			return err
		}
	}
	it.Status, it.Text = agent.ItemDone, strings.Join(parts, "")
	return t.complete(it)
}

// failure is FAIL_TURN: an API error the agent retries, then one that
// ends the turn.
func (t *turnRun) failure() error {
	if !t.has(WordFail) {
		return nil
	}
	if err := t.emit(t.event(agent.KindError, func(e *agent.Event) {
		e.Error = &agent.Error{Code: agent.ErrorAPI, Message: "mock: the model API is overloaded; retrying", Status: 529, Retrying: true}
	})); err != nil {
		return err
	}
	return errFailTurn
}

func (t *turnRun) plan() error {
	steps := []agent.PlanStep{
		{Text: "Read the prompt", Status: "completed"},
		{Text: "Show every item type", Status: "in_progress"},
		{Text: "Reply", Status: "pending"},
	}
	return t.complete(agent.Item{ID: t.id + "/plan", Type: agent.ItemPlan, Status: agent.ItemDone, Plan: steps})
}

// command reports a made-up shell command: nothing runs. With SLOW it
// waits for the turn's context to end, its command still open.
func (t *turnRun) command() error {
	cmd := &agent.Command{Command: "echo " + strconv.Quote("mock turn "+strconv.Itoa(t.n)), Cwd: t.s.workspace}
	it := agent.Item{ID: t.id + "/command", Type: agent.ItemCommand, Command: cmd}
	if err := t.startItem(it); err != nil {
		return err
	}
	out := "mock turn " + strconv.Itoa(t.n) + "\n"
	if err := t.delta(it.ID, agent.FieldOutput, out); err != nil {
		return err
	}
	if t.has(WordSlow) {
		<-t.ctx.Done()
		return t.ctx.Err()
	}
	done := *cmd
	done.Output, done.ExitCode = out, new(0)
	it.Status, it.Command = agent.ItemDone, &done
	return t.complete(it)
}

func (t *turnRun) fileChange() error {
	it := agent.Item{ID: t.id + "/file", Type: agent.ItemFileChange, Changes: []agent.FileChange{{Path: notesName, Kind: t.s.noteKind()}}}
	if err := t.startItem(it); err != nil {
		return err
	}
	t.s.mu.Lock()
	change, err := t.s.conv.appendNote(t.s.workspace, noteLine(t.n, t.prompt))
	t.s.mu.Unlock()
	it.Status, it.Changes = agent.ItemDone, []agent.FileChange{change}
	if err != nil {
		it.Status = agent.ItemFailed
		t.outcomes = append(t.outcomes, "I could not write "+notesName+": "+err.Error()+".")
	}
	return t.complete(it)
}

func noteLine(n int, prompt string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if r := []rune(line); len(r) > 60 {
		line = string(r[:59]) + "…"
	}
	return "turn " + strconv.Itoa(n) + ": " + line
}

// toolCall calls the mock's tool; with REQUEST_APPROVAL it asks first,
// unless the tool was allowed for the session.
func (t *turnRun) toolCall() error {
	input, _ := json.Marshal(map[string]string{"query": noteLine(t.n, t.prompt)})
	call := &agent.ToolCall{Name: ToolName, Input: input}
	it := agent.Item{ID: t.id + "/tool", Type: agent.ItemToolCall, Tool: call}
	if err := t.startItem(it); err != nil {
		return err
	}
	if t.has(WordApproval) && !t.s.allowedForSession(ToolName) {
		r, err := t.ask(agent.Approval{Kind: agent.ApprovalTool, ItemID: it.ID, Tool: ToolName, Input: input,
			Title: ToolName + ": " + noteLine(t.n, t.prompt), Scopes: []agent.Scope{agent.ScopeOnce, agent.ScopeSession}})
		if err != nil {
			return err
		}
		if r.Decision != agent.Allow {
			t.outcomes = append(t.outcomes, "The "+ToolName+" call was denied"+reason(r)+", so I did not run it.")
			done := *call
			done.Output, done.IsError = "denied"+reason(r), true
			it.Status, it.Tool = agent.ItemDeclined, &done
			return t.complete(it)
		}
		t.outcomes = append(t.outcomes, "The "+ToolName+" call was allowed ("+string(orOnce(r.Scope))+").")
	}
	done := *call
	done.Output = "3 mock results"
	it.Status, it.Tool = agent.ItemDone, &done
	return t.complete(it)
}

func reason(r agent.Resolution) string {
	if r.Reason == "" {
		return ""
	}
	return ": " + r.Reason
}

func orOnce(s agent.Scope) agent.Scope {
	if s == "" {
		return agent.ScopeOnce
	}
	return s
}

// question is ASK_QUESTION: a question item whose answer is the
// resolution of a question approval.
func (t *turnRun) question() error {
	if !t.has(WordQuestion) {
		return nil
	}
	q := &agent.Question{Prompt: "Which colour should the mock use?", Options: questionOptions()}
	it := agent.Item{ID: t.id + "/question", Type: agent.ItemQuestion, Question: q}
	if err := t.startItem(it); err != nil {
		return err
	}
	r, err := t.ask(agent.Approval{Kind: agent.ApprovalQuestion, ItemID: it.ID, Title: q.Prompt, Question: q,
		Scopes: []agent.Scope{agent.ScopeOnce}})
	if err != nil {
		return err
	}
	it.Status = agent.ItemDone
	switch {
	case r.Decision != agent.Allow:
		it.Status = agent.ItemDeclined
		t.outcomes = append(t.outcomes, "You declined the question.")
	case len(r.Answers) == 0:
		t.outcomes = append(t.outcomes, "You chose no colour.")
	default:
		labels := optionLabels(r.Answers)
		it.Text = strings.Join(labels, ", ")
		t.outcomes = append(t.outcomes, "You chose: "+it.Text+".")
	}
	return t.complete(it)
}

func questionOptions() []agent.Option {
	return []agent.Option{{ID: "red", Label: "Red"}, {ID: "green", Label: "Green"}, {ID: "blue", Label: "Blue"}}
}

func optionLabels(ids []string) []string {
	var labels []string
	for _, id := range ids {
		for _, o := range questionOptions() {
			if o.ID == id {
				labels = append(labels, o.Label)
			}
		}
	}
	return labels
}

// reply streams the answer as a message, then reports usage.
func (t *turnRun) reply() error {
	text := t.replyText()
	it := agent.Item{ID: t.id + "/reply", Type: agent.ItemMessage}
	if err := t.startItem(it); err != nil {
		return err
	}
	for _, w := range strings.SplitAfter(text, " ") {
		if err := t.delta(it.ID, agent.FieldText, w); err != nil {
			return err
		}
	}
	it.Status, it.Text = agent.ItemDone, text
	if err := t.complete(it); err != nil {
		return err
	}
	// A line of the mock's own that the model has no place for, as real
	// agents write (a stream's end, a keep-alive).
	native := t.event(agent.KindNative, func(e *agent.Event) {
		e.Raw = json.RawMessage(`{"type":"mock.reply_done","turn":` + strconv.Itoa(t.n) + `}`)
	})
	if err := t.emit(native); err != nil {
		return err
	}
	return t.emit(t.event(agent.KindUsage, func(e *agent.Event) { e.Usage = t.usage(text) }))
}

func (t *turnRun) replyText() string {
	parts := []string{fmt.Sprintf("Mock reply to turn %d: you said %q.", t.n, t.prompt)}
	if len(t.images) > 0 {
		parts = append(parts, imagesSeen(t.images))
	}
	parts = append(parts, t.outcomes...)
	t.s.mu.Lock()
	for _, st := range t.steers {
		parts = append(parts, fmt.Sprintf("You steered: %q.", st))
	}
	t.s.mu.Unlock()
	switch {
	case t.planOnly:
		parts = append(parts, "Plan mode: I ran, wrote and called nothing.")
	default:
		parts = append(parts, "I noted it in "+notesName+".")
	}
	if t.model != "" {
		parts = append(parts, "Model: "+t.model+".")
	}
	return strings.Join(parts, " ")
}

// imagesSeen says how many images came, of which types and sizes:
// "You sent 2 images (image/png 68 bytes, image/jpeg 1024 bytes)."
func imagesSeen(images []agent.Image) string {
	each := make([]string, len(images))
	for i, img := range images {
		each[i] = fmt.Sprintf("%s %d bytes", img.MediaType, len(img.Data))
	}
	noun := "images"
	if len(images) == 1 {
		noun = "image"
	}
	return fmt.Sprintf("You sent %d %s (%s).", len(images), noun, strings.Join(each, ", "))
}

// usage is made up and deterministic: words in, words out.
func (t *turnRun) usage(reply string) *agent.Usage {
	return &agent.Usage{InputTokens: int64(100*t.n + len(strings.Fields(t.prompt))),
		OutputTokens: int64(len(strings.Fields(reply))), ReasoningTokens: 8}
}

// finish ends the turn. An ended context means an interrupt or the
// session's close: open items complete failed and the turn interrupted.
func (t *turnRun) finish(err error) {
	status, why := agent.TurnCompleted, (*agent.Error)(nil)
	var usage *agent.Usage
	text := ""
	switch {
	case errors.Is(err, errFailTurn):
		status, why = agent.TurnFailed, &agent.Error{Code: agent.ErrorAPI, Message: err.Error(), Status: 500}
	case err != nil:
		msg := err.Error()
		if cause := context.Cause(t.ctx); cause != nil {
			msg = cause.Error()
		}
		status, why = agent.TurnInterrupted, &agent.Error{Code: agent.ErrorInterrupted, Message: msg}
	default:
		text = t.lastReply()
		usage = t.usage(text)
	}
	events := make([]agent.Event, 0, len(t.open)+1)
	for _, id := range t.order {
		if it, ok := t.open[id]; ok {
			it.Status = agent.ItemFailed
			if it.Type == agent.ItemQuestion || it.Type == agent.ItemToolCall {
				it.Status = agent.ItemDeclined // an approval that never came is no
			}
			events = append(events, t.itemEvent(agent.KindItemCompleted, it))
		}
	}
	duration := t.s.d.cfg.Now().Sub(t.start).Milliseconds()
	events = append(events, t.event(agent.KindTurnCompleted, func(e *agent.Event) {
		e.Turn = &agent.TurnInfo{Status: status, Text: text, DurationMS: duration}
		e.Usage, e.Error = usage, why
	}))
	// Without waiting for room: the turn is over. The turn is cleared in
	// the same step, so a client may prompt as soon as it reads the end.
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	t.s.emitLocked(events...)
	if t.s.turn == t {
		t.s.turn = nil
	}
}

func (t *turnRun) lastReply() string {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	items := t.s.conv.items
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].ID == t.id+"/reply" {
			return items[i].Text
		}
	}
	return ""
}
