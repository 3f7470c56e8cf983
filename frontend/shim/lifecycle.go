package shim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

// startRun starts a run of brief: a new session of the agent (resuming
// native where given), then, once the caller has replied, its prompt.
// The returned start func begins the run; the caller calls it after
// flushing its reply, so the backend knows the agent before its events.
func (s *Server) startRun(ctx context.Context, brief AgentBrief, native string, turns int) (*run, error) {
	// The brief's modelPreference is the backend's way to choose a
	// plugin, not a model name the agent knows: the agent's own
	// configuration picks the model.
	req := sessions.CreateRequest{Agent: s.cfg.Agent, WorkspaceID: s.cfg.WorkspaceID, Resume: native}
	if native != "" && s.cfg.ResumeOptions != nil {
		req.Options = s.cfg.ResumeOptions(turns)
	}
	info, err := s.cfg.Sessions.Create(ctx, req)
	if err != nil {
		return nil, err
	}
	id := s.cfg.NewID()
	entry, err := s.runs.add(runRecord{ID: id, SessionID: info.ID, AgentID: brief.AgentID, Workstream: brief.Workstream,
		Started: s.cfg.Now()})
	if err != nil {
		s.log.Warn("the run's record was not saved", "run", id, "err", err)
	}
	r := &run{s: s, id: id, sessionID: info.ID, entry: entry, brief: brief, turnsBefore: turns,
		mapper: newMapper(brief.AgentID, brief.Workstream, id), status: StatusRunning,
		nativeID: info.NativeID, resolved: map[string]chan struct{}{}, options: map[string][]string{}, done: make(chan struct{})}
	return r, nil
}

// begin starts r's pump with its first prompt.
func (s *Server) begin(r *run, prompt, action string) {
	s.goSafe("run", func() { r.pump(s.ctx, prompt, action) }, func(v any) { s.crashed(r, v) })
}

func (s *Server) handle(r *run) AgentHandle {
	r.mu.Lock()
	defer r.mu.Unlock()
	return AgentHandle{ID: r.brief.AgentID, PluginName: s.PluginName(), Status: r.status, SessionID: r.nativeID}
}

// replace stops the previous run, if any, so a new one can take the
// workspace: quietly, as it already ended or was paused (or, for a
// resume, is replaced as the reference shims replace it).
func (s *Server) replace(ctx context.Context, old *run) {
	if old == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StopTimeout)
	defer cancel()
	if err := old.stop(ctx, "", true); err != nil {
		s.log.Warn("previous run did not stop cleanly", "run", old.id, "err", err)
	}
}

func (s *Server) spawn(w http.ResponseWriter, r *http.Request) {
	raw, ok := readBody(w, r, nil)
	if !ok {
		return
	}
	brief, err := parseBrief(raw)
	if err != nil {
		detail(w, http.StatusUnprocessableEntity, "invalid brief: "+err.Error())
		return
	}
	if brief.AgentID == "" {
		detail(w, http.StatusUnprocessableEntity, "invalid brief: agentId is required")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run != nil && s.run.active() {
		detail(w, http.StatusConflict, "Agent already running")
		return
	}
	s.replace(r.Context(), s.run)
	run, err := s.startRun(r.Context(), brief, "", 0)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.run, s.brief = run, brief
	prompt := s.withQueued(BriefToPrompt(brief, false))
	writeJSON(w, http.StatusOK, s.handle(run))
	flush(w)
	s.begin(run, prompt, "started")
}

// fail answers an error of the runner core.
func (s *Server) fail(w http.ResponseWriter, err error) {
	var unsupported *agent.UnsupportedError
	switch {
	case errors.As(err, &unsupported), errors.Is(err, sessions.ErrUnknownAgent):
		detail(w, http.StatusUnprocessableEntity, err.Error())
	case errors.Is(err, sessions.ErrAgentStart):
		detail(w, http.StatusBadGateway, err.Error())
	default:
		detail(w, http.StatusInternalServerError, err.Error())
	}
}

// noRun is the current run, or answers 404 without one; the caller
// holds s.mu.
func (s *Server) noRun(w http.ResponseWriter) *run {
	r := s.run
	if r == nil {
		detail(w, http.StatusNotFound, "No agent running")
	}
	return r
}

// MaxGraceTimeout is the longest grace a kill's graceTimeoutMs may ask
// for: the shim's lifecycle waits on it.
const MaxGraceTimeout = 10 * time.Minute

func (s *Server) kill(w http.ResponseWriter, r *http.Request) {
	var body KillRequest
	if _, ok := readBody(w, r, &body); !ok {
		return
	}
	if body.GraceTimeoutMs < 0 || body.GraceTimeoutMs > MaxGraceTimeout.Milliseconds() {
		bad := &RangeError{Field: "graceTimeoutMs", Value: strconv.FormatInt(body.GraceTimeoutMs, 10),
			Reason: fmt.Sprintf("a grace is 0 (the default) to %d ms", MaxGraceTimeout.Milliseconds())}
		detail(w, http.StatusBadRequest, bad.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	run := s.noRun(w)
	if run == nil {
		return
	}
	graceful := body.Grace == nil || *body.Grace
	timeout := s.cfg.StopTimeout
	if body.GraceTimeoutMs > 0 {
		timeout = time.Duration(body.GraceTimeoutMs) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	wasEnded := run.isEnded()
	err := run.stop(ctx, "kill", graceful)
	if !wasEnded {
		reason := map[bool]string{true: "kill requested (graceful)", false: "kill requested (force)"}[graceful]
		run.emit(s.cfg.Now(), run.mapper.ev("lifecycle", "action", "killed", "reason", reason))
	}
	run.setStatus(StatusDone)
	writeJSON(w, http.StatusOK, KillResponse{State: nil, CleanShutdown: err == nil && graceful})
}

func (r *run) isEnded() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ended
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	if _, ok := readBody(w, r, nil); !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	run := s.noRun(w)
	if run == nil {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StopTimeout)
	defer cancel()
	wasEnded := run.isEnded()
	if err := run.stop(ctx, "pause", true); err != nil {
		s.log.Warn("pause: the agent did not stop cleanly", "run", run.id, "err", err)
	}
	// The decisions the stream left open: the stop's denials of them are
	// past the run's end.
	st := run.state("pause", s.cfg.Now())
	st.BriefSnapshot = s.brief.Raw // with its updates
	if !wasEnded {
		run.emit(s.cfg.Now(), run.mapper.ev("lifecycle", "action", "paused"))
	}
	run.setStatus(StatusPaused)
	st.LastSequence = run.lastSeq()
	writeJSON(w, http.StatusOK, st)
}

func (r *run) lastSeq() int64 { return r.s.runs.count(r.entry) }

func (s *Server) checkpoint(w http.ResponseWriter, r *http.Request) {
	var body struct {
		DecisionID string `json:"decisionId"`
	}
	if _, ok := readBody(w, r, &body); !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	run := s.noRun(w)
	if run == nil {
		return
	}
	st := run.state("decision_checkpoint", s.cfg.Now())
	st.BriefSnapshot = s.brief.Raw // with its updates
	if body.DecisionID != "" && !containsString(st.PendingDecisionIDs, body.DecisionID) {
		st.PendingDecisionIDs = append(st.PendingDecisionIDs, body.DecisionID)
	}
	writeJSON(w, http.StatusOK, st)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// resumePrompt is what a resumed run is told: a new assignment
// (continuation) when the brief's workstream or description changed,
// else to go on with the same one, whose brief follows.
func resumePrompt(prev *AgentBrief, brief AgentBrief) string {
	if prev != nil && (prev.Workstream != brief.Workstream || prev.Description != brief.Description) {
		return BriefToPrompt(brief, true)
	}
	return "Your work was paused and is resumed now. Continue your assignment where you left off.\n\n" + BriefToPrompt(brief, false)
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	var st SerializedAgentState
	if _, ok := readBody(w, r, &st); !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var prev *AgentBrief
	if s.run != nil {
		b := s.brief
		prev = &b
	}
	brief := s.brief
	if len(st.BriefSnapshot) > 0 && string(st.BriefSnapshot) != "null" {
		b, err := parseBrief(st.BriefSnapshot)
		if err != nil {
			detail(w, http.StatusUnprocessableEntity, "invalid briefSnapshot: "+err.Error())
			return
		}
		brief = b
	}
	if brief.AgentID == "" {
		brief.AgentID = st.AgentID
	}
	if brief.AgentID == "" {
		detail(w, http.StatusUnprocessableEntity, "nothing to resume: the state has no agentId and no briefSnapshot")
		return
	}
	native, turns, err := resumePoint(st)
	if err != nil {
		detail(w, http.StatusBadRequest, err.Error())
		return
	}
	if native == "" {
		detail(w, http.StatusUnprocessableEntity, "nothing to resume: the state names no session (checkpoint.sessionId or sessionId)")
		return
	}
	s.replace(r.Context(), s.run)
	run, err := s.startRun(r.Context(), brief, native, turns)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.run, s.brief = run, brief
	prompt := s.withQueued(resumePrompt(prev, brief))
	writeJSON(w, http.StatusOK, s.handle(run))
	flush(w)
	s.begin(run, prompt, "resumed")
}
