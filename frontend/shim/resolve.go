package shim

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"time"

	"github.com/tetherhq/tether/agent"
)

// resolveWait bounds how long a /resolve reply waits for the decision's
// resolution to be in the stream.
const resolveWait = 2 * time.Second

// resolve answers a decision through the durable approvals: a tool
// approval's approve allows (alwaysApprove for the rest of the session
// where the agent can), modify allows with its arguments (see modified),
// reject denies; an option decision's chosen option is the answer. An unknown decision is 200
// {"status":"not_found"} (the backend throws on a 404 and may resolve
// some decisions itself), one answered before is 200
// {"status":"already_resolved"}.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	var body ResolveRequest
	if _, ok := readBody(w, r, &body); !ok {
		return
	}
	if body.DecisionID == "" {
		detail(w, http.StatusUnprocessableEntity, "decisionId is required")
		return
	}
	res, args, msg := toResolution(body)
	if msg != "" {
		detail(w, http.StatusUnprocessableEntity, msg)
		return
	}
	s.mu.Lock()
	run := s.noRun(w)
	s.mu.Unlock()
	if run == nil {
		return
	}
	if len(res.Answers) == 1 && run.refuses(body.DecisionID, res.Answers[0]) {
		detail(w, http.StatusUnprocessableEntity, "chosenOptionId "+res.Answers[0]+" is not an option of decision "+body.DecisionID)
		return
	}
	if res.Scope == agent.ScopeSession && !s.offers(run.sessionID, body.DecisionID, agent.ScopeSession) {
		res.Scope = agent.ScopeOnce // alwaysApprove is a wish; this approval allows once
	}
	if len(args) > 0 {
		res = s.modified(run.sessionID, res, args)
	}
	_, err := s.cfg.Sessions.Resolve(r.Context(), run.sessionID, res)
	var already *agent.AlreadyResolvedError
	switch {
	case errors.As(err, &already):
		writeJSON(w, http.StatusOK, map[string]string{"status": "already_resolved", "decisionId": body.DecisionID,
			"decision": string(already.First.Decision)})
		return
	case errors.Is(err, agent.ErrUnknownApproval):
		writeJSON(w, http.StatusOK, map[string]string{"status": "not_found", "decisionId": body.DecisionID})
		return
	case err != nil:
		detail(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	run.waitResolved(r.Context(), body.DecisionID, resolveWait)
	writeJSON(w, http.StatusOK, map[string]string{"status": "resolved", "decisionId": body.DecisionID})
}

// offers says whether the pending approval id of session offers scope
// (an answer it does not offer would be refused by the agent after the
// store recorded it).
func (s *Server) offers(sessionID, id string, scope agent.Scope) bool {
	a, ok := s.pendingApproval(sessionID, id)
	return ok && containsScope(a.Scopes, scope)
}

// pendingApproval is approval id of session, while it is open.
func (s *Server) pendingApproval(sessionID, id string) (agent.Approval, bool) {
	pending, err := s.cfg.Sessions.Approvals()
	if err != nil {
		return agent.Approval{}, false
	}
	for _, rec := range pending {
		if rec.Approval.SessionID == sessionID && rec.Approval.ID == id {
			return rec.Approval, true
		}
	}
	return agent.Approval{}, false
}

// modified applies a modify's arguments. Where the agent runs a call with
// edited input (Claude Code), the call runs with them, laid over its
// input key by key. Elsewhere the call is denied, and the model is told
// the arguments to make it again with: running it as asked is not what
// was decided.
func (s *Server) modified(sessionID string, res agent.Resolution, args map[string]json.RawMessage) agent.Resolution {
	a, ok := s.pendingApproval(sessionID, res.ApprovalID)
	if !ok {
		return res // unknown, or answered already: the store says which
	}
	if s.cfg.Sessions.Agents()[s.cfg.Agent].EditInput {
		input := map[string]json.RawMessage{}
		_ = json.Unmarshal(a.Input, &input) // an input that is no object is replaced
		maps.Copy(input, args)
		res.Input, _ = json.Marshal(input)
		return res
	}
	shown, _ := json.Marshal(args)
	reason := "Not run as asked: the reviewer changed its arguments to " + string(shown) + ". Make the call again with them."
	if res.Reason != "" {
		reason += " " + res.Reason
	}
	res.Decision, res.Scope, res.Reason = agent.Deny, "", reason
	return res
}

func containsScope(scopes []agent.Scope, s agent.Scope) bool {
	for _, x := range scopes {
		if x == s {
			return true
		}
	}
	return false
}

// toResolution reads the backend's resolution, and a modify's arguments
// (none for a modify that changes nothing); msg says what is wrong.
func toResolution(body ResolveRequest) (res agent.Resolution, args map[string]json.RawMessage, msg string) {
	res = agent.Resolution{ApprovalID: body.DecisionID, Cause: agent.CauseClient, By: "backend", Reason: body.Resolution.Rationale}
	switch body.Resolution.Type {
	case "option":
		if body.Resolution.ChosenOptionID == "" {
			return res, nil, "resolution.chosenOptionId is required for an option decision"
		}
		res.Decision, res.Answers = agent.Allow, []string{body.Resolution.ChosenOptionID}
	case "tool_approval":
		switch body.Resolution.Action {
		case "approve":
			res.Decision = agent.Allow
		case "modify":
			res.Decision = agent.Allow
			raw := body.Resolution.ModifiedArgs
			if len(raw) > 0 && string(raw) != "null" && (json.Unmarshal(raw, &args) != nil || args == nil) {
				return res, nil, "resolution.modifiedArgs must be an object"
			}
		case "reject":
			res.Decision = agent.Deny
		default:
			return res, nil, `resolution.action must be "approve", "reject" or "modify"`
		}
		if body.Resolution.AlwaysApprove && res.Decision == agent.Allow {
			res.Scope = agent.ScopeSession
		}
	default:
		return res, nil, `resolution.type must be "option" or "tool_approval"`
	}
	return res, args, ""
}
