package opencode

import (
	"errors"
	"fmt"
	"net/url"
)

// Paths of the endpoints that take no id.
const (
	PathHealth        = "/global/health"  // GET: Health
	PathEvent         = "/event"          // GET: the event stream of the server's instance
	PathGlobalEvent   = "/global/event"   // GET: every instance's events, wrapped with their directory
	PathSessions      = "/session"        // POST: create (CreateSessionRequest → Session); GET: list
	PathSessionStatus = "/session/status" // GET: map of session id → SessionStatus (busy and retrying ones)
	PathPermissions   = "/permission"     // GET: pending []PermissionRequest
	PathQuestions     = "/question"       // GET: pending []QuestionRequest
)

// ErrInvalidID is wrapped by the error of a path helper given an id that
// cannot name a resource: empty, "." or "..", which would address another
// route once the path is cleaned.
var ErrInvalidID = errors.New("opencode: invalid id")

// segment escapes id as one path segment.
func segment(what, id string) (string, error) {
	if id == "" || id == "." || id == ".." {
		return "", fmt.Errorf("%w: %s %q", ErrInvalidID, what, id)
	}
	return url.PathEscape(id), nil
}

func sessionSub(sessionID, suffix string) (string, error) {
	s, err := segment("session", sessionID)
	if err != nil {
		return "", err
	}
	return "/session/" + s + suffix, nil
}

// SessionPath is /session/{id}: GET the Session, PATCH it, DELETE it.
func SessionPath(sessionID string) (string, error) { return sessionSub(sessionID, "") }

// SessionMessagesPath is /session/{id}/message: GET the
// []MessageWithParts; POST a PromptRequest and wait for the answer's
// MessageWithParts.
func SessionMessagesPath(sessionID string) (string, error) {
	return sessionSub(sessionID, "/message")
}

// SessionMessagePath is /session/{id}/message/{messageID}: GET one
// MessageWithParts.
func SessionMessagePath(sessionID, messageID string) (string, error) {
	m, err := segment("message", messageID)
	if err != nil {
		return "", err
	}
	return sessionSub(sessionID, "/message/"+m)
}

// SessionPromptAsyncPath is /session/{id}/prompt_async: POST a
// PromptRequest; 204 at once, the answer comes as events.
func SessionPromptAsyncPath(sessionID string) (string, error) {
	return sessionSub(sessionID, "/prompt_async")
}

// SessionAbortPath is /session/{id}/abort: POST (no body) stops the
// running turn; answers true.
func SessionAbortPath(sessionID string) (string, error) { return sessionSub(sessionID, "/abort") }

// SessionDiffPath is /session/{id}/diff: GET the []FileDiff of the turn of
// one user message (messageID), the same diffs as that message's summary.
// Without a messageID, 1.18.33 answers [] even after a turn has changed
// files, so a session's changes are read from its user messages' summaries.
func SessionDiffPath(sessionID, messageID string) (string, error) {
	p, err := sessionSub(sessionID, "/diff")
	if err != nil || messageID == "" {
		return p, err
	}
	return p + "?" + url.Values{"messageID": {messageID}}.Encode(), nil
}

// SessionForkPath is /session/{id}/fork: POST a ForkRequest; answers the
// new Session.
func SessionForkPath(sessionID string) (string, error) { return sessionSub(sessionID, "/fork") }

// SessionRevertPath is /session/{id}/revert: POST a RevertRequest; answers
// the Session (409 while it is busy).
func SessionRevertPath(sessionID string) (string, error) { return sessionSub(sessionID, "/revert") }

// SessionUnrevertPath is /session/{id}/unrevert: POST (no body) restores
// what a revert removed; answers the Session.
func SessionUnrevertPath(sessionID string) (string, error) {
	return sessionSub(sessionID, "/unrevert")
}

// SessionTodoPath is /session/{id}/todo: GET the []Todo.
func SessionTodoPath(sessionID string) (string, error) { return sessionSub(sessionID, "/todo") }

// SessionChildrenPath is /session/{id}/children: GET the []Session started
// from it (subagents').
func SessionChildrenPath(sessionID string) (string, error) {
	return sessionSub(sessionID, "/children")
}

// PermissionReplyPath is /permission/{requestID}/reply: POST a
// PermissionReplyRequest; answers true (404 for an unknown request).
func PermissionReplyPath(requestID string) (string, error) {
	r, err := segment("permission request", requestID)
	if err != nil {
		return "", err
	}
	return "/permission/" + r + "/reply", nil
}

// QuestionReplyPath is /question/{requestID}/reply: POST a
// QuestionReplyRequest; answers true.
func QuestionReplyPath(requestID string) (string, error) {
	r, err := segment("question request", requestID)
	if err != nil {
		return "", err
	}
	return "/question/" + r + "/reply", nil
}

// QuestionRejectPath is /question/{requestID}/reject: POST (no body)
// declines to answer; answers true.
func QuestionRejectPath(requestID string) (string, error) {
	r, err := segment("question request", requestID)
	if err != nil {
		return "", err
	}
	return "/question/" + r + "/reject", nil
}

// WithDirectory adds the directory query parameter every instance endpoint
// takes: the project directory whose instance answers (the server's
// working directory when absent).
func WithDirectory(path, directory string) string {
	if directory == "" {
		return path
	}
	sep := "?"
	for i := 0; i < len(path); i++ {
		if path[i] == '?' {
			sep = "&"
			break
		}
	}
	return path + sep + url.Values{"directory": {directory}}.Encode()
}
