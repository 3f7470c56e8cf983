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
// log first — its pending approvals denied, an open turn failed, then
// session.ended — because its agent went with that run, and a client
// following it must see it end rather than wait forever.
func (m *Manager) recover() error {
	infos, err := m.index.load()
	if err != nil {
		m.log.Warn("sessions index", "err", err) // the readable records still load
	}
	if len(infos) == 0 {
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
	for _, info := range infos {
		if info.State != StateEnded {
			if err := m.endOrphan(&info, bySession[info.ID]); err != nil {
				return err
			}
			m.log.Info("session of an earlier run ended", "session", info.ID, "agent", info.Agent)
		}
		if last, err := m.cfg.Log.Last(info.ID); err == nil {
			info.LastSeq = last
		}
		m.sessions[info.ID] = pastSession(m, info)
	}
	return nil
}

// endOrphan logs the end of a session an earlier run left going and
// records it as ended.
func (m *Manager) endOrphan(info *Info, pending []approvals.Record) error {
	ctx := context.Background()
	now := m.cfg.Now()
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
		events = append(events, agent.Event{Kind: agent.KindApprovalResolved, TurnID: rec.Approval.TurnID, Resolution: &won})
	}
	lost := &agent.Error{Code: agent.ErrorAgentExit, Message: restartReason + " while the session ran; its agent ended with it"}
	if info.State == StateRunning && info.TurnID != "" {
		events = append(events, agent.Event{Kind: agent.KindTurnCompleted, TurnID: info.TurnID,
			Turn: &agent.TurnInfo{Status: agent.TurnFailed}, Error: lost})
	}
	events = append(events, agent.Event{Kind: agent.KindSessionEnded,
		Session: &agent.SessionInfo{Agent: info.Agent, NativeID: info.NativeID, Reason: "exited"}, Error: lost})
	for _, e := range events {
		e.SessionID, e.Time = info.ID, now
		if _, err := m.logEvent(ctx, info.Agent, info.ID, &e); err != nil {
			return fmt.Errorf("sessions: end %s in its log: %w", info.ID, err)
		}
		if err := m.feed.append(ctx, m.cfg.Log, &e); err != nil {
			return err
		}
	}
	info.State, info.TurnID = StateEnded, ""
	return m.index.save(*info)
}

// pastSession is a session of an earlier run: ended, its events in the
// log, no agent behind it.
func pastSession(m *Manager, info Info) *session {
	s := newSession(m, info, endedAgent{}, nil)
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
