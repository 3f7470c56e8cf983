package protov1

import (
	"context"

	"github.com/tetherhq/tether/agent"
	v1 "github.com/tetherhq/tether/protocol/runnerv1"
)

// projector makes a session's frames from its events, for one host:
//
//   - session.started is ready (the agent is up);
//   - an event carrying a line of the CLI's (raw, a JSON object) is a
//     message with that line: embedded as is for a relay host, as the
//     payload string otherwise; each line is on one event only;
//   - turn.completed is done ("completed", or "error" for a turn that
//     failed or was interrupted), except for a turn the CLI died in:
//     the session's end says that;
//   - session.ended with an error (the CLI exited) is an error frame
//     agent_exited; not when a runner's restart ended it.
//
// Every other event (a turn's start, an approval, a delta the host reads
// in its own line) makes no frame: the host sees seqs rise past it.
// Messages and done frames carry the request id of the query whose turn
// they belong to (the last one's, between turns, as hosts expect).
type projector struct {
	relay bool
	// requests are the request ids of the turns seen, by turn id; last
	// is the newest's.
	requests map[string]string
	last     string
	// find looks a turn's request id up in the log, for a stream that
	// begins in the middle of the turn.
	find func(turnID string, before uint64) string
}

func newProjector(relay bool, find func(turnID string, before uint64) string) *projector {
	return &projector{relay: relay, requests: map[string]string{}, find: find}
}

// frame appends the frame e makes, without its seq, to dst; ok is false
// when it makes none.
func (p *projector) frame(dst []byte, e *agent.Event) ([]byte, bool) {
	request := p.request(e)
	switch e.Kind {
	case agent.KindSessionStarted:
		ready, _ := v1.Encode(v1.Ready{SessionID: e.SessionID})
		return append(dst, ready...), true
	case agent.KindTurnCompleted:
		if e.Error != nil && e.Error.Code == agent.ErrorAgentExit {
			return dst, false
		}
		reason := "completed"
		if e.Turn.Status != agent.TurnCompleted {
			reason = "error"
		}
		done, _ := v1.Encode(v1.Done{RequestID: request, Reason: reason})
		return append(dst, done...), true
	case agent.KindSessionEnded:
		// A runner's restart ended the session with its agent: the host
		// that comes back reopens it (its SDK ends the lost turn itself).
		if e.Error == nil || e.Error.Code != agent.ErrorAgentExit || e.Session.Reason == agent.ReasonRestarted {
			return dst, false
		}
		failed, _ := v1.Encode(v1.Error{RequestID: request, Code: v1.CodeAgentExited, Details: e.Error.Message})
		return append(dst, failed...), true
	}
	line := e.Raw
	if len(line) == 0 || line[0] != '{' {
		return dst, false // no line, or one that was not JSON (the CLI's junk)
	}
	// The core logs only payloads any host's decoder reads (see
	// agent.Event.Raw): a checked one is embedded as it is.
	if p.relay && (e.RawChecked || v1.EmbeddableLine(line)) {
		return v1.AppendMessageRaw(dst, 0, request, line), true
	}
	return v1.AppendMessageLine(dst, 0, request, []byte(line)), true
}

// request is the request id e's frames carry, learning it from a turn's
// start.
func (p *projector) request(e *agent.Event) string {
	if e.TurnID == "" {
		return p.last
	}
	if e.Kind == agent.KindTurnStarted {
		id := ""
		if e.Turn != nil {
			id = e.Turn.RequestID
		}
		p.requests[e.TurnID], p.last = id, id
		return id
	}
	id, ok := p.requests[e.TurnID]
	if !ok {
		id = p.find(e.TurnID, uint64(e.Seq))
		p.requests[e.TurnID], p.last = id, id
	}
	return id
}

// findRequest looks back in session id's log from seq before for the
// start of turn turnID, in windows that double, and returns its request
// id ("" when the turn started with none, or the log no longer has it).
func (c *conn) findRequest(ctx context.Context, id, turnID string, before uint64) string {
	for window := uint64(256); ; window *= 2 {
		from := before - min(before-1, window)
		found, done := "", false
		for e, err := range c.srv.Sessions.Events(ctx, id, from-1) {
			if err != nil || uint64(e.Seq) >= before {
				break
			}
			if e.Kind == agent.KindTurnStarted && e.TurnID == turnID {
				found, done = turnRequest(e), true
			}
		}
		if done || from <= 1 {
			return found
		}
	}
}

func turnRequest(e agent.Event) string {
	if e.Turn == nil {
		return ""
	}
	return e.Turn.RequestID
}
