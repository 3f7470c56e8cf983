package shim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/tetherhq/tether/agent"
)

// Context injections and brief updates reach the agent: by steering the
// running turn where the agent can, else as the next turn right after
// the running one ends (before its completion is told), else in the
// prompt of the next spawn or resume. None is stored and ignored.

// delivery says how an update reached (or will reach) the agent.
const (
	deliveredSteered = "steered"  // added to the running turn
	deliveredTurn    = "new_turn" // sent as a turn of its own at once
	deliveredQueued  = "queued"   // waits for the next turn boundary
	deliveredDropped = "dropped"  // a supplementary injection over budget
)

// deliver hands text to the agent the soonest way it can take it.
func (s *Server) deliver(ctx context.Context, text string) string {
	r := s.current()
	if r != nil {
		r.mu.Lock()
		inTurn := r.inTurn && r.stopping == "" && !r.ended
		r.mu.Unlock()
		idle := r.idle()
		switch {
		case inTurn:
			if err := s.cfg.Sessions.Steer(ctx, r.sessionID, agent.Prompt{Text: text}); err == nil {
				return deliveredSteered
			}
		case idle:
			if err := s.cfg.Sessions.Prompt(ctx, r.sessionID, agent.Prompt{Text: text}); err == nil {
				r.setStatus(StatusRunning)
				return deliveredTurn
			} else if !errors.Is(err, agent.ErrTurnInProgress) {
				s.log.Warn("update not sent as a turn; queued", "err", err)
			}
		}
	}
	s.qmu.Lock()
	s.queued = append(s.queued, text)
	s.qmu.Unlock()
	// The turn may have ended meanwhile: its pump took the queue then, or
	// takes it once its completion is out (see flushAfterTurn); and if
	// that is past, the queue goes now, as a turn of its own.
	if r != nil && r.idle() && s.followUp(ctx, r) {
		r.setStatus(StatusRunning)
		return deliveredTurn
	}
	return deliveredQueued
}

// flushAfterTurn sends what was queued while r's completion was going
// out, as a turn of its own: the boundary where the pump takes the queue
// had passed, and no later one may come.
func (s *Server) flushAfterTurn(ctx context.Context, r *run) {
	if r.idle() && s.followUp(ctx, r) {
		r.setStatus(StatusRunning)
	}
}

// takeQueued empties the queue.
func (s *Server) takeQueued() string {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	text := strings.Join(s.queued, "\n\n")
	s.queued = nil
	return text
}

// withQueued is a run's first prompt with the queued updates after it.
func (s *Server) withQueued(prompt string) string {
	if q := s.takeQueued(); q != "" {
		return prompt + "\n\n" + q
	}
	return prompt
}

// followUp sends the queued updates as the next turn of r, when there
// are any; the pump calls it at a turn's end.
func (s *Server) followUp(ctx context.Context, r *run) bool {
	r.mu.Lock()
	stopping := r.stopping != ""
	r.mu.Unlock()
	if stopping {
		return false
	}
	text := s.takeQueued()
	if text == "" {
		return false
	}
	if err := s.cfg.Sessions.Prompt(ctx, r.sessionID, agent.Prompt{Text: text}); err != nil {
		s.qmu.Lock()
		s.queued = append([]string{text}, s.queued...)
		s.qmu.Unlock()
		return false
	}
	return true
}

// queuedLen is the queue's size in characters.
func (s *Server) queuedLen() int {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	n := 0
	for _, q := range s.queued {
		n += len(q)
	}
	return n
}

func (s *Server) injectContext(w http.ResponseWriter, r *http.Request) {
	var body ContextInjection
	if _, ok := readBody(w, r, &body); !ok {
		return
	}
	if strings.TrimSpace(body.Content) == "" {
		detail(w, http.StatusUnprocessableEntity, "content is required")
		return
	}
	text := "## Context update"
	if body.Priority != "" {
		text += " (" + body.Priority + ")"
	}
	text += "\n" + body.Content
	// Supplementary context is the first to go: not past the prompt's
	// budget. Required and recommended context always goes through.
	if body.Priority == "supplementary" && s.queuedLen()+len(text) > MaxPrompt {
		writeJSON(w, http.StatusOK, map[string]string{"status": "accepted", "delivery": deliveredDropped})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "accepted", "delivery": s.deliver(r.Context(), text)})
}

func (s *Server) updateBrief(w http.ResponseWriter, r *http.Request) {
	var body updateBrief
	raw, ok := readBody(w, r, &body)
	if !ok {
		return
	}
	changes := body.Changes
	if len(changes) == 0 { // a bare object of changes, as the seed's table has it
		var bare map[string]json.RawMessage
		_ = json.Unmarshal(raw, &bare)
		delete(bare, "handle")
		changes, _ = json.Marshal(bare)
	}
	var changed map[string]json.RawMessage
	if err := json.Unmarshal(changes, &changed); err != nil || changed == nil {
		detail(w, http.StatusUnprocessableEntity, "changes must be an object")
		return
	}
	s.mu.Lock()
	if s.run == nil {
		s.mu.Unlock()
		detail(w, http.StatusNotFound, "No agent running")
		return
	}
	merged, err := mergeBrief(s.brief.Raw, changed)
	if err == nil {
		var b AgentBrief
		if b, err = parseBrief(merged); err == nil {
			s.brief = b
		}
	}
	brief := s.brief
	s.mu.Unlock()
	if err != nil {
		detail(w, http.StatusUnprocessableEntity, "changes do not fit the brief: "+err.Error())
		return
	}
	text := "## Brief update\nYour brief was updated. The updated brief follows; go on under it.\n\n" + BriefToPrompt(brief, false)
	writeJSON(w, http.StatusOK, map[string]string{"status": "accepted", "delivery": s.deliver(r.Context(), text)})
}

// mergeBrief sets each changed top-level field of the brief.
func mergeBrief(raw json.RawMessage, changed map[string]json.RawMessage) (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, err
		}
	}
	for k, v := range changed {
		fields[k] = v
	}
	return json.Marshal(fields)
}
