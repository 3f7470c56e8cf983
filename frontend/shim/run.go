package shim

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

// run is one spawn or resume: one canonical session of the agent, its
// own runId and sequence (from 1), mapped onto AgentEvents. Its pump
// follows the session and decides, for each event, what the run's stream
// makes of it (the events of the shim's own: lifecycle, crashes, the
// follow-up turns, the uploaded artifacts' uris); the stream's readers
// make the events from the log (view.go).
type run struct {
	s         *Server
	id        string
	sessionID string
	entry     *runEntry
	brief     AgentBrief
	mapper    *mapper
	// turnsBefore are the turns the conversation had before this run
	// (the mock's script position); turns counts this run's.
	turnsBefore int

	mu       sync.Mutex
	status   string
	nativeID string
	inTurn   bool
	turnDone bool   // the last turn completed and nothing followed it
	stopping string // why the run is being stopped: pause, kill or replace
	ended    bool
	resolved map[string]chan struct{} // closed when the decision's resolution is out
	done     chan struct{}            // closed when the pump has ended
	pending  []openDecision           // open decisions, in order
	options  map[string][]string      // an open option decision's option ids
	turns    int
	// turnEnd is the canonical seq of the last turn.completed the pump
	// saw; turnEnded is closed (and replaced) at each.
	turnEnd   int64
	turnEnded chan struct{}
	// folded counts the canonical events decided since the last
	// checkpoint (the pump's own).
	folded int
}

// openDecision is an open decision and the canonical seq that asked it.
type openDecision struct {
	id  string
	seq int64
}

func (r *run) getStatus() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

func (r *run) setStatus(st string) {
	r.mu.Lock()
	r.status = st
	r.mu.Unlock()
}

// active says whether the run still works (spawn refuses a second one).
func (r *run) active() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.ended && (r.status == StatusRunning || r.status == StatusWaiting)
}

// emit adds events of the shim's own after the run's end (a kill's, a
// pause's).
func (r *run) emit(at time.Time, events ...Event) {
	if err := r.s.runs.mark(r.entry, at, events...); err != nil {
		r.s.log.Warn("the run's record was not saved", "run", r.id, "err", err)
	}
}

// decide records what the run's stream makes of canonical seq: events
// of them, and change's marks and uris.
func (r *run) decide(seq int64, events int, change func(*runRecord)) {
	if err := r.s.runs.decide(r.entry, seq, int64(events), change); err != nil {
		r.s.log.Warn("the run's record was not saved", "run", r.id, "err", err)
	}
}

// pump follows the run's canonical session and decides its AgentEvents,
// until the session ends.
func (r *run) pump(ctx context.Context, prompt, action string) {
	defer close(r.done)
	head := []mark{{After: 0, At: r.s.cfg.Now(), Events: []Event{r.mapper.ev("lifecycle", "action", action)}}}
	if err := r.s.cfg.Sessions.Prompt(ctx, r.sessionID, agent.Prompt{Text: prompt}); err != nil {
		head = append(head, mark{After: 0, At: r.s.cfg.Now(), Events: []Event{r.mapper.ev("error", "severity", "critical",
			"message", clip("the agent did not take the prompt: "+err.Error()), "category", "internal", "recoverable", false)}})
		r.setStatus(StatusError)
	}
	r.decide(0, len(head), func(rec *runRecord) { rec.Marks = append(rec.Marks, head...) })
	for e, err := range r.s.cfg.Sessions.Events(ctx, r.sessionID, 0) {
		if err != nil {
			if ctx.Err() == nil {
				r.s.log.Warn("run events failed", "run", r.id, "err", err)
			}
			break
		}
		if !r.handle(ctx, e) {
			break
		}
	}
	r.mu.Lock()
	r.ended, r.inTurn = true, false
	r.mu.Unlock()
	r.s.runs.finish(r.entry)
}

// handle decides one canonical event's AgentEvents and keeps the run's
// state; false when the session has ended.
func (r *run) handle(ctx context.Context, e agent.Event) bool {
	seq := e.Seq
	if e.Kind == agent.KindTurnCompleted {
		r.turnOver(seq)
	}
	if r.s.runs.pastCut(r.entry, seq) {
		// The run was stopped (a pause, a kill): its stream ended there,
		// and what the agent does while it stops (the approvals the stop
		// denied, the interrupted turn) is the stop's, which its lifecycle
		// event tells. The run's state stays as the stream left it.
		return e.Kind != agent.KindSessionEnded
	}
	switch e.Kind {
	case agent.KindSessionStarted:
		if e.Session != nil && e.Session.NativeID != "" {
			r.mu.Lock()
			r.nativeID = e.Session.NativeID
			r.mu.Unlock()
		}
		r.decide(seq, 0, nil)
		return true
	case agent.KindSessionEnded:
		r.mu.Lock()
		stopping := r.stopping
		r.mu.Unlock()
		if stopping != "" {
			r.decide(seq, 0, nil)
			return false
		}
		// Nobody asked: the agent is gone.
		reason := "the agent's session ended"
		if e.Session != nil && e.Session.Reason != "" {
			reason += ": " + e.Session.Reason
		}
		if e.Error != nil {
			reason += ": " + e.Error.Message
		}
		crash := mark{After: uint64(seq), At: e.Time, Events: []Event{
			r.mapper.ev("error", "severity", "critical", "message", clip(reason), "category", "internal", "recoverable", false),
			r.mapper.ev("lifecycle", "action", "crashed", "reason", clip(reason))}}
		r.decide(seq, len(crash.Events), func(rec *runRecord) { rec.Marks = append(rec.Marks, crash) })
		r.setStatus(StatusError)
		return false
	case agent.KindTurnStarted:
		r.mu.Lock()
		r.inTurn, r.turnDone = true, false
		r.turns++
		if r.stopping == "" {
			r.status = StatusRunning
		}
		r.mu.Unlock()
	case agent.KindApprovalRequested:
		r.requested(e.Approval, seq)
	case agent.KindTurnCompleted:
		if e.Turn.Status == agent.TurnCompleted && r.s.followUp(ctx, r) {
			r.mapper.Map(e)
			followUp := mark{After: uint64(seq), Replace: true, At: e.Time, Events: []Event{
				r.mapper.status("Turn completed; delivering the queued context and brief updates")}}
			r.decide(seq, 1, func(rec *runRecord) { rec.Marks = append(rec.Marks, followUp) })
			return true
		}
	}
	m := r.mapper.Map(e)
	uris := map[string]string{}
	for i, a := range m.artifacts {
		if r.s.cfg.Bootstrap.ArtifactUploadEndpoint == "" {
			break
		}
		id := m.events[i]["artifactId"].(string)
		if uri, ok := r.upload(ctx, id, a); ok {
			uris[id] = uri
		}
	}
	var change func(*runRecord)
	if len(uris) > 0 {
		change = func(rec *runRecord) {
			if rec.URIs == nil {
				rec.URIs = map[string]string{}
			}
			maps.Copy(rec.URIs, uris)
		}
	}
	if e.Kind == agent.KindTurnCompleted {
		// Idle before the completion is out: a client that reads it and
		// sends an update at once gets a turn, not a queue.
		r.after(e)
		r.decide(seq, len(m.events), change)
		r.s.flushAfterTurn(ctx, r)
	} else {
		r.decide(seq, len(m.events), change)
		r.after(e)
	}
	if r.folded++; r.folded == checkpointEvery {
		r.folded = 0
		r.s.runs.checkpoint(r.entry, seq, r.mapper.state())
	}
	return true
}

// turnOver notes a turn's end at canonical seq, for a stop waiting on it.
func (r *run) turnOver(seq int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.turnEnd = max(r.turnEnd, seq)
	if r.turnEnded != nil {
		close(r.turnEnded)
		r.turnEnded = nil
	}
}

// upload posts artifact id to the backend, with the file's content as it
// is now, and returns its backend uri.
func (r *run) upload(ctx context.Context, id string, a artifactEvent) (string, bool) {
	content, ok, why := artifactContent(r.s.cfg.Workspace, a.path)
	if !ok {
		r.s.log.Warn("artifact uploaded without its content", "artifact", id, "path", a.path, "why", why)
	}
	uri, withContent, err := upload(ctx, r.s.cfg.HTTPClient, r.s.cfg.Bootstrap,
		artifactUpload{agentID: r.brief.AgentID, artifactID: id, mimeType: a.mimeType, content: content})
	if err != nil {
		r.s.log.Warn("artifact not uploaded; its path is kept", "artifact", id, "err", err)
		return "", false
	}
	if ok && !withContent {
		r.s.log.Warn("artifact uploaded without its content: the backend refused it as too large", "artifact", id, "bytes", len(content))
	}
	return uri, true
}

// requested notes an open decision asked at canonical seq, and its
// options.
func (r *run) requested(a *agent.Approval, seq int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(r.pending, openDecision{id: a.ID, seq: seq})
	if q := a.Question; q != nil {
		for _, o := range q.Options {
			r.options[a.ID] = append(r.options[a.ID], o.ID)
		}
	}
	r.status = StatusWaiting
}

// after updates the run's state once e's events are out.
func (r *run) after(e agent.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Kind {
	case agent.KindApprovalResolved:
		id := e.Resolution.ApprovalID
		r.pending = slices.DeleteFunc(r.pending, func(p openDecision) bool { return p.id == id })
		delete(r.options, id)
		if ch, ok := r.resolved[id]; ok {
			close(ch)
		} else {
			r.resolved[id] = closedChan()
		}
		if r.status == StatusWaiting && len(r.pending) == 0 {
			r.status = StatusRunning
		}
	case agent.KindTurnCompleted:
		r.inTurn, r.turnDone = false, true
		if r.stopping == "" {
			r.status = map[agent.TurnStatus]string{agent.TurnCompleted: StatusDone, agent.TurnFailed: StatusError}[e.Turn.Status]
			if r.status == "" {
				r.status = StatusIdle
			}
		}
	}
}

// idle says whether r's last turn completed, nothing followed it, and the
// run goes on: an update may start a turn of its own.
func (r *run) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.turnDone && r.stopping == "" && !r.ended
}

func closedChan() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// refuses says whether decision id is an open option decision without
// option, so a wrong answer is refused before it is recorded.
func (r *run) refuses(id, option string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	opts, ok := r.options[id]
	return ok && !slices.Contains(opts, option)
}

// waitResolved waits (up to max) until decision id's resolution is in
// the stream, so a /resolve reply comes after its follow-on events.
func (r *run) waitResolved(ctx context.Context, id string, max time.Duration) {
	r.mu.Lock()
	ch, ok := r.resolved[id]
	if !ok {
		ch = make(chan struct{})
		r.resolved[id] = ch
	}
	r.mu.Unlock()
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}

// stop ends the run's session (why: pause or kill; "" replaces it
// quietly) and waits for its last events. clean is false when the agent
// did not end within the timeout.
//
// The agent is stopped where it stands: the run's stream ends at what it
// has shown (stopping is not the agent's work, and the lifecycle event
// tells it), then the running turn is interrupted and, when graceful,
// its end awaited, and only then is the session closed. A session closed
// mid-turn lets the agent go on with what it was doing as it goes:
// Claude Code answered its own cancelled permission request and called
// the model once more.
func (r *run) stop(ctx context.Context, why string, graceful bool) error {
	r.mu.Lock()
	if r.stopping == "" {
		r.stopping = why
		if why == "" {
			r.stopping = "replace"
		}
	}
	r.mu.Unlock()
	if err := r.s.runs.stopAt(r.entry); err != nil {
		r.s.log.Warn("the run's record was not saved", "run", r.id, "err", err)
	}
	r.interrupt(ctx, graceful)
	err := r.s.cfg.Sessions.Close(ctx, r.sessionID)
	select {
	case <-r.done:
	case <-ctx.Done():
		return errors.Join(err, ctx.Err())
	}
	return err
}

// interrupt interrupts the session's running turn, if any, and (wait)
// waits for its end, for at most half of what is left of ctx: the rest
// is the close's.
func (r *run) interrupt(ctx context.Context, wait bool) {
	m := r.s.cfg.Sessions
	info, err := m.Get(r.sessionID)
	if err != nil || info.State == sessions.StateEnded {
		return
	}
	if err := m.Interrupt(ctx, r.sessionID); err != nil {
		if !errors.Is(err, agent.ErrNoTurn) && !errors.Is(err, agent.ErrSessionEnded) {
			r.s.log.Warn("the agent's turn was not interrupted; its session is closed", "run", r.id, "err", err)
		}
		return
	}
	if !wait {
		return
	}
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Until(deadline)/2)
		defer cancel()
	}
	r.awaitTurnEnd(ctx, int64(info.LastSeq))
}

// awaitTurnEnd waits for a turn to end after canonical seq `after` (the
// interrupted one's), the session's end, or ctx.
func (r *run) awaitTurnEnd(ctx context.Context, after int64) {
	for {
		r.mu.Lock()
		if r.turnEnd > after || r.ended {
			r.mu.Unlock()
			return
		}
		if r.turnEnded == nil {
			r.turnEnded = make(chan struct{})
		}
		ch := r.turnEnded
		r.mu.Unlock()
		select {
		case <-ch:
		case <-r.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// state serializes the run for /pause and /checkpoint.
func (r *run) state(by string, at time.Time) SerializedAgentState {
	seq := r.s.runs.count(r.entry)
	shown := r.s.runs.shownEnd(r.entry)
	r.mu.Lock()
	native, turns := r.nativeID, r.turnsBefore+r.turns
	pending := []string{} // the ones the stream has shown
	for _, p := range r.pending {
		if p.seq <= shown {
			pending = append(pending, p.id)
		}
	}
	status := r.status
	r.mu.Unlock()
	st := SerializedAgentState{AgentID: r.brief.AgentID, PluginName: r.s.PluginName(), SessionID: native,
		Checkpoint: r.s.checkpointOf(native, turns), BriefSnapshot: r.brief.Raw, PendingDecisionIDs: pending,
		LastSequence: seq, SerializedAt: utc(at), SerializedBy: by,
		ConversationSummary: fmt.Sprintf("%s session %s: %d turn(s), %d event(s) in run %s, %s", r.s.cfg.Agent, native, turns, seq, r.id, status)}
	if b, err := json.Marshal(st); err == nil {
		st.EstimatedSizeBytes = len(b)
	}
	return st
}

// checkpointOf names what a resume continues. The backend's union has
// tags for claude and gemini (sessionId) and mock (scriptPosition); for
// the others
// the agent's own session id travels as openai's runStateJson, with
// sessionId beside it (see docs/shim.md).
func (s *Server) checkpointOf(native string, turns int) SdkCheckpoint {
	snapshot := map[string]any{"agent": s.cfg.Agent, "turns": turns}
	switch sdk := cmp.Or(s.cfg.CheckpointSDK, s.cfg.Agent); sdk {
	case "claude", "gemini":
		return SdkCheckpoint{SDK: sdk, SessionID: native, StateSnapshot: snapshot}
	case "mock":
		return SdkCheckpoint{SDK: "mock", SessionID: native, ScriptPosition: &turns, StateSnapshot: snapshot}
	}
	runState, _ := json.Marshal(map[string]any{"agent": s.cfg.Agent, "sessionId": native, "turns": turns})
	return SdkCheckpoint{SDK: "openai", SessionID: native, RunStateJSON: string(runState), StateSnapshot: snapshot}
}

// MaxScriptPosition is the largest script position (turns so far) a
// resume takes: the shim counts a conversation's turns on from it, and
// no conversation has more.
const MaxScriptPosition = math.MaxInt32

// resumePoint is the agent's own session id and script position a
// state names. A position out of 0..MaxScriptPosition is a RangeError.
func resumePoint(st SerializedAgentState) (native string, turns int, err error) {
	native = st.Checkpoint.SessionID
	if p := st.Checkpoint.ScriptPosition; p != nil {
		if turns, err = scriptPosition("checkpoint.scriptPosition", json.Number(strconv.Itoa(*p))); err != nil {
			return "", 0, err
		}
	}
	if st.Checkpoint.RunStateJSON != "" {
		var rs struct {
			SessionID string      `json:"sessionId"`
			Turns     json.Number `json:"turns"`
		}
		// Not of this shim's shape: the session ids beside it still tell.
		if json.Unmarshal([]byte(st.Checkpoint.RunStateJSON), &rs) == nil {
			if native == "" {
				native = rs.SessionID
			}
			if rs.Turns != "" {
				n, err := scriptPosition("checkpoint.runStateJson turns", rs.Turns)
				if err != nil {
					return "", 0, err
				}
				if turns == 0 {
					turns = n
				}
			}
		}
	}
	if native == "" {
		native = st.SessionID
	}
	return native, turns, nil
}

// scriptPosition reads a position in 0..MaxScriptPosition.
func scriptPosition(field string, v json.Number) (int, error) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < 0 || n > MaxScriptPosition {
		return 0, &RangeError{Field: field, Value: string(v), Reason: fmt.Sprintf("a script position is a whole number from 0 to %d", MaxScriptPosition)}
	}
	return int(n), nil
}
