package sessions

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/approvals"
)

// restartReason is what a session the runner's restart ended says.
const restartReason = "the runner restarted"

// recover loads the index of an earlier run. Sessions that had ended are
// served from their logs; a session that run left going is ended in its
// log first — its pending approvals denied, its open items completed, an
// open turn failed, then session.ended — because its agent went with that
// run, and a client following it must see it end rather than wait
// forever.
func (m *Manager) recover() error {
	recs, err := m.index.load()
	if err != nil {
		m.log.Warn("sessions index", "err", err) // the readable records still load
	}
	if len(recs) == 0 {
		return nil
	}
	pending, err := m.cfg.Approvals.Pending()
	if err != nil {
		return fmt.Errorf("sessions: approvals: %w", err)
	}
	bySession := map[string][]approvals.Record{}
	for _, rec := range pending {
		bySession[rec.Approval.SessionID] = append(bySession[rec.Approval.SessionID], rec)
	}
	for _, rec := range recs {
		if rec.State != StateEnded {
			if err := m.endOrphan(&rec, bySession[rec.ID]); err != nil {
				return err
			}
			m.log.Info("session of an earlier run ended", "session", rec.ID, "agent", rec.Agent)
		}
		if last, err := m.cfg.Log.Last(rec.ID); err == nil {
			rec.LastSeq = last
		}
		m.sessions[rec.ID] = pastSession(m, rec)
	}
	return nil
}

// endOrphan logs the end of a session an earlier run left going and
// records it as ended: what a shutdown would have logged, had there been
// one.
func (m *Manager) endOrphan(rec *record, pending []approvals.Record) error {
	info := &rec.Info
	ctx := context.Background()
	now := m.cfg.Now()
	open, err := m.openWork(ctx, info.ID)
	if err != nil {
		return err
	}
	var events []agent.Event
	for _, rec := range pending {
		res := agent.Resolution{ApprovalID: rec.Approval.ID, Decision: agent.Deny, Reason: restartReason,
			Cause: agent.CauseTurnEnded, At: now}
		won, err := m.cfg.Approvals.Resolve(info.ID, res)
		var already *agent.AlreadyResolvedError
		switch {
		case errors.As(err, &already):
			won = already.First
		case err != nil:
			return fmt.Errorf("sessions: approval %s of %s: %w", rec.Approval.ID, info.ID, err)
		}
		open.approvalItem[rec.Approval.ID] = rec.Approval.ItemID
		open.resolved(won)
		events = append(events, agent.Event{Kind: agent.KindApprovalResolved, TurnID: rec.Approval.TurnID, Resolution: &won})
	}
	events = append(events, open.completions()...)
	lost := &agent.Error{Code: agent.ErrorAgentExit, Message: restartReason + " while the session ran; its agent ended with it"}
	turn := open.turnID
	if turn == "" && info.State == StateRunning {
		turn = info.TurnID // its start did not reach the log before the crash
	}
	if turn != "" {
		events = append(events, agent.Event{Kind: agent.KindTurnCompleted, TurnID: turn,
			Turn: &agent.TurnInfo{Status: agent.TurnFailed}, Error: lost})
	}
	events = append(events, agent.Event{Kind: agent.KindSessionEnded,
		Session: &agent.SessionInfo{Agent: info.Agent, NativeID: info.NativeID, Reason: agent.ReasonRestarted}, Error: lost})
	for _, e := range events {
		e.SessionID, e.Time = info.ID, now
		if _, err := m.logEvent(ctx, info.Agent, info.ID, &e); err != nil {
			return fmt.Errorf("sessions: end %s in its log: %w", info.ID, err)
		}
	}
	info.State, info.TurnID = StateEnded, ""
	return m.index.save(*rec)
}

// openWork is what a session's log leaves open: the items started and not
// completed, as far as their deltas took them, and the turn started and
// not completed.
type openWork struct {
	items  map[string]*openItem
	order  []string // item ids, in the order they started
	turnID string
	// approvalItem maps an approval to the item it decides; declined
	// are the items an approval denied, which did not run.
	approvalItem map[string]string
	declined     map[string]bool
}

type openItem struct {
	turnID string
	item   agent.Item
}

// openWork reads session id's log for what it leaves open.
func (m *Manager) openWork(ctx context.Context, id string) (*openWork, error) {
	w := &openWork{items: map[string]*openItem{}, approvalItem: map[string]string{}, declined: map[string]bool{}}
	for ev, err := range m.cfg.Log.Read(ctx, id, 0) {
		if err != nil {
			return nil, fmt.Errorf("sessions: read %s: %w", id, err)
		}
		e, err := agent.DecodeLogged(ev.Payload)
		if err != nil {
			// One damaged event must not keep the session from ending.
			m.log.Warn("sessions: event of an earlier run not readable", "session", id, "seq", ev.Seq, "err", err)
			continue
		}
		w.add(&e)
	}
	return w, nil
}

// add follows one logged event.
func (w *openWork) add(e *agent.Event) {
	switch e.Kind {
	case agent.KindTurnStarted:
		w.turnID = e.TurnID
	case agent.KindTurnCompleted:
		w.turnID = ""
	case agent.KindItemStarted:
		if e.Item == nil {
			return
		}
		if _, ok := w.items[e.Item.ID]; !ok {
			w.order = append(w.order, e.Item.ID)
		}
		// Started again (with its whole input, say): the later word holds.
		w.items[e.Item.ID] = &openItem{turnID: e.TurnID, item: *e.Item}
	case agent.KindItemDelta:
		if e.Delta != nil {
			if it, ok := w.items[e.Delta.ItemID]; ok {
				extend(&it.item, e.Delta)
			}
		}
	case agent.KindItemCompleted:
		if e.Item != nil {
			delete(w.items, e.Item.ID)
		}
	case agent.KindApprovalRequested:
		if e.Approval != nil && e.Approval.ItemID != "" {
			w.approvalItem[e.Approval.ID] = e.Approval.ItemID
		}
	case agent.KindApprovalResolved:
		if e.Resolution != nil {
			w.resolved(*e.Resolution)
		}
	}
}

// resolved notes a decision: an item whose approval was denied did not
// run.
func (w *openWork) resolved(r agent.Resolution) {
	if item := w.approvalItem[r.ApprovalID]; item != "" && r.Decision != agent.Allow {
		w.declined[item] = true
	}
}

// extend adds a delta to an item, so a completed item keeps what the
// item streamed. A tool's streamed input is partial JSON: the input the
// item started with stands.
func extend(it *agent.Item, d *agent.Delta) {
	switch {
	case d.Field == agent.FieldText:
		it.Text += d.Text
	case d.Field == agent.FieldOutput && it.Command != nil:
		c := *it.Command
		c.Output += d.Text
		it.Command = &c
	case d.Field == agent.FieldOutput && it.Tool != nil:
		t := *it.Tool
		t.Output += d.Text
		it.Tool = &t
	}
}

// completions are the item.completed events of the open items, in the
// order they started: declined where an approval denied them, else
// failed, as when a shutdown stops their agent.
func (w *openWork) completions() []agent.Event {
	var events []agent.Event
	for _, id := range w.order {
		open, ok := w.items[id]
		if !ok {
			continue
		}
		it := open.item
		it.Status = agent.ItemFailed
		if w.declined[id] {
			it.Status = agent.ItemDeclined
		}
		events = append(events, agent.Event{Kind: agent.KindItemCompleted, TurnID: open.turnID, Item: &it})
	}
	return events
}

// pastSession is a session of an earlier run: ended, its events in the
// log, no agent behind it.
func pastSession(m *Manager, rec record) *session {
	s := newSession(m, rec, endedAgent{}, nil, nil)
	s.ended = true
	close(s.done)
	return s
}

// endedAgent stands in for the agent of a session that ended in an
// earlier run: everything but Close says so.
type endedAgent struct{}

func (endedAgent) NativeID() string { return "" }
func (endedAgent) Events(context.Context) iter.Seq2[agent.Event, error] {
	return func(func(agent.Event, error) bool) {}
}
func (endedAgent) Prompt(context.Context, agent.Prompt) error      { return agent.ErrSessionEnded }
func (endedAgent) Steer(context.Context, agent.Prompt) error       { return agent.ErrSessionEnded }
func (endedAgent) Interrupt(context.Context) error                 { return agent.ErrSessionEnded }
func (endedAgent) Resolve(context.Context, agent.Resolution) error { return agent.ErrSessionEnded }
func (endedAgent) Messages(context.Context) ([]agent.Item, error)  { return nil, agent.ErrSessionEnded }
func (endedAgent) Diff(context.Context) ([]agent.FileChange, error) {
	return nil, agent.ErrSessionEnded
}
func (endedAgent) Close() error { return nil }
