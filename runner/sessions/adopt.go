package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"github.com/tetherhq/tether/agent"
)

// ErrNotAdoptable: a session cannot be taken over from another runner.
var ErrNotAdoptable = errors.New("sessions: the session cannot be taken over")

// Adoption is a session another runner ran and lost, for this runner to
// take over: its record as the fleet kept it, and the start options that
// continue its agent's conversation here.
type Adoption struct {
	Info    Info
	Model   string
	Options json.RawMessage
	// MCPServers are the session's MCP servers, which the agent is
	// started with again.
	MCPServers []agent.MCPServer
}

// Adopt takes over a session another runner ran: its events (history, in
// seq order, as that runner logged them) are copied into this runner's
// log after what the log already holds of it, and the session is started
// again under its id and in its workspace, its agent resuming the
// conversation (its native id) from the agent's home, which must be on
// storage both runners reach. Its seq goes on from the history's last.
func (m *Manager) Adopt(ctx context.Context, a Adoption, history iter.Seq2[agent.Event, error]) (Info, error) {
	if m.ShuttingDown() {
		return Info{}, ErrShuttingDown
	}
	id := a.Info.ID
	if _, err := m.get(id); err == nil {
		return m.Reopen(ctx, id, 0, false) // adopted here before, and ended since
	}
	d, err := m.driver(a.Info.Agent)
	if err != nil {
		return Info{}, err
	}
	if !d.Capabilities().Resume || a.Info.NativeID == "" {
		return Info{}, fmt.Errorf("%w: %s: %w", ErrNotAdoptable, id, &agent.UnsupportedError{Agent: a.Info.Agent, Capability: "resume"})
	}
	last, err := m.copyHistory(ctx, id, history)
	if err != nil {
		return Info{}, err
	}
	rec := record{Info: a.Info, Options: a.Options, MCPServers: a.MCPServers}
	if a.Model != "" {
		rec.Model = a.Model
	}
	rec.State, rec.TurnID, rec.Runner, rec.LastSeq = StateEnded, "", "", last
	m.mu.Lock()
	if _, taken := m.sessions[id]; taken {
		m.mu.Unlock()
		return Info{}, fmt.Errorf("%w: %s", ErrLive, id)
	}
	m.sessions[id] = pastSession(m, rec)
	m.mu.Unlock()
	if err := m.index.save(rec); err != nil {
		m.forgetPast(id)
		return Info{}, err
	}
	info, err := m.Reopen(ctx, id, 0, false)
	if err != nil {
		m.forgetPast(id)
		return Info{}, err
	}
	m.log.Info("session taken over from another runner", "session", id, "agent", rec.Agent, "seq", last)
	return info, nil
}

// copyHistory appends to session id's log the events of history it does
// not hold yet, keeping their seqs (a gap in history stays a gap), and
// returns the last seq.
func (m *Manager) copyHistory(ctx context.Context, id string, history iter.Seq2[agent.Event, error]) (uint64, error) {
	last, err := m.cfg.Log.Last(id)
	if err != nil {
		last = 0 // the log has none of it yet
	}
	for e, err := range history {
		if err != nil {
			return 0, fmt.Errorf("sessions: history of %s: %w", id, err)
		}
		seq := uint64(e.Seq)
		switch {
		case seq <= last:
			continue
		case seq > last+1 && last == 0:
			return 0, fmt.Errorf("%w: %s: its history starts at seq %d", ErrNotAdoptable, id, seq)
		case seq > last+1:
			if err := m.cfg.Log.Skip(id, seq-1); err != nil {
				return 0, fmt.Errorf("sessions: history of %s: %w", id, err)
			}
		}
		e.Seq, e.Logged = 0, nil
		payloads, release, err := m.encode([]agent.Event{e})
		if err != nil {
			return 0, err
		}
		_, _, err = m.cfg.Log.AppendAt(ctx, id, payloads)
		release()
		if err != nil {
			return 0, fmt.Errorf("sessions: history of %s: %w", id, err)
		}
		last = seq
	}
	if last == 0 {
		return 0, fmt.Errorf("%w: %s: no history", ErrNotAdoptable, id)
	}
	return last, nil
}

// forgetPast drops an adopted session that did not start again: the fleet
// may hand it to another runner.
func (m *Manager) forgetPast(id string) {
	m.mu.Lock()
	if s, ok := m.sessions[id]; ok {
		s.mu.Lock()
		ended := s.ended
		s.mu.Unlock()
		if ended {
			delete(m.sessions, id)
		}
	}
	m.mu.Unlock()
	m.index.remove(id)
}
