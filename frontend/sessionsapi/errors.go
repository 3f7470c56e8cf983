package sessionsapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

// apiError is the one shape every error has: {"error":{"code","message"}}.
// Codes are stable; messages are for people.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": apiError{Code: code, Message: message}})
}

// fail maps the core's errors onto statuses and codes.
func (a *api) fail(w http.ResponseWriter, err error) {
	var unsupported *agent.UnsupportedError
	switch {
	case errors.Is(err, agent.ErrInvalidMCPServer):
		writeError(w, http.StatusBadRequest, "invalid_mcp_server", err.Error())
	case errors.As(err, new(*agent.MCPTransportError)),
		errors.As(err, &unsupported) && unsupported.Capability == agent.CapabilityMCPServers:
		writeError(w, http.StatusBadRequest, "mcp_transport_unsupported", err.Error())
	case errors.Is(err, sessions.ErrNotFound):
		writeError(w, http.StatusNotFound, "session_not_found", err.Error())
	case errors.Is(err, sessions.ErrUnknownAgent):
		writeError(w, http.StatusBadRequest, "unknown_agent", err.Error())
	case errors.Is(err, workspace.ErrInvalidID):
		writeError(w, http.StatusBadRequest, "invalid_workspace_id", err.Error())
	case errors.Is(err, workspace.ErrBusy):
		writeError(w, http.StatusConflict, "workspace_busy", err.Error())
	case errors.Is(err, agent.ErrTurnInProgress):
		writeError(w, http.StatusConflict, "turn_in_progress", err.Error())
	case errors.Is(err, agent.ErrNoTurn):
		writeError(w, http.StatusConflict, "no_turn", err.Error())
	case errors.Is(err, agent.ErrSessionEnded), errors.Is(err, sessions.ErrEnded):
		writeError(w, http.StatusConflict, "session_ended", err.Error())
	case errors.Is(err, agent.ErrInvalidImage):
		writeError(w, http.StatusBadRequest, "invalid_image", err.Error())
	case errors.Is(err, agent.ErrBadAnswer):
		writeError(w, http.StatusBadRequest, "bad_answer", err.Error())
	case errors.Is(err, agent.ErrUnknownApproval):
		writeError(w, http.StatusNotFound, "approval_not_found", err.Error())
	case errors.Is(err, agent.ErrUnsupported):
		writeError(w, http.StatusNotImplemented, "unsupported", err.Error())
	case errors.Is(err, agent.ErrInvalidSettings):
		writeError(w, http.StatusBadRequest, "invalid_settings", err.Error())
	case errors.Is(err, sessions.ErrInvalidRequest), errors.Is(err, agent.ErrInvalidEvent):
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
	case errors.Is(err, sessions.ErrAgentStart):
		writeError(w, http.StatusBadGateway, "agent_start_failed", err.Error())
	case errors.Is(err, sessions.ErrShuttingDown):
		writeError(w, http.StatusServiceUnavailable, "shutting_down", err.Error())
	case errors.Is(err, sessions.ErrTooManySessions):
		writeError(w, http.StatusServiceUnavailable, "no_room", err.Error())
	case errors.Is(err, sessions.ErrLive):
		writeError(w, http.StatusConflict, "session_live", err.Error())
	case errors.Is(err, sessions.ErrNotAdoptable):
		writeError(w, http.StatusConflict, "not_resumable", err.Error())
	case errors.Is(err, sessions.ErrDraining):
		writeError(w, http.StatusServiceUnavailable, "runner_draining", err.Error())
	case errors.Is(err, sessions.ErrNoRunner):
		writeError(w, http.StatusNotFound, "runner_not_found", err.Error())
	case errors.Is(err, sessions.ErrRunnerGone):
		writeError(w, http.StatusBadGateway, "runner_gone", err.Error())
	default:
		a.cfg.Logger.Error("sessions API request failed", "err", err)
		writeError(w, http.StatusInternalServerError, "internal_error", err.Error())
	}
}

// readJSON decodes a request body: JSON by its Content-Type, at most
// MaxBody, exactly one object and nothing after it, no unknown fields. It
// answers the error itself and returns false.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	return readJSONUpTo(w, r, v, MaxBody)
}

// readJSONUpTo is readJSON with a bound of limit bytes.
func readJSONUpTo(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "the body must be JSON, sent as Content-Type: application/json")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// One value only: what follows it must be nothing but space.
		if _, next := dec.Token(); next != io.EOF {
			err = errors.New("something follows the JSON object")
		}
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body is over %d bytes", limit))
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid_request", "the body is not the JSON object expected: "+err.Error())
		return false
	}
	return true
}
