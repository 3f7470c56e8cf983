package fakeopenai

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// apiError is the OpenAI error body.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// fallbackModel names the model in replies to requests that name none.
const fallbackModel = "gpt-fake"

func modelOr(model string) string {
	if model == "" {
		return fallbackModel
	}
	return model
}

type modelInfo struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// models are the models listed: Codex's bundled slug, the model the
// OpenCode config names, and the fallback.
func models() []modelInfo {
	var out []modelInfo
	for _, id := range []string{"gpt-5.5", "fake-model", fallbackModel} {
		out = append(out, modelInfo{ID: id, Object: "model", Created: 1700000000, OwnedBy: "fake"})
	}
	return out
}

// handleModels lists models the OpenAI way ("data"); the empty "models" is
// the shape Codex's own model catalogue endpoint has, so either reader works.
func handleModels(w http.ResponseWriter, _ *http.Request) {
	_ = fakehttp.WriteJSON(w, http.StatusOK, struct {
		Object string      `json:"object"`
		Data   []modelInfo `json:"data"`
		Models []any       `json:"models"`
	}{"list", models(), []any{}})
}

// handleModel serves any model id, since the clients accept any model name.
func handleModel(w http.ResponseWriter, r *http.Request) {
	_ = fakehttp.WriteJSON(w, http.StatusOK, modelInfo{ID: r.PathValue("id"), Object: "model", Created: 1700000000, OwnedBy: "fake"})
}

func handleNotFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, fmt.Sprintf("fake: no route %s %s", r.Method, r.URL.Path))
}

func writeBodyError(w http.ResponseWriter, err error) {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		writeError(w, http.StatusRequestEntityTooLarge, err.Error())
		return
	}
	writeError(w, http.StatusBadRequest, fmt.Sprintf("fake: read body: %v", err))
}

// writeStatusError answers an ERROR_<code> trigger. A 429 says when to retry,
// as the real API does.
func writeStatusError(w http.ResponseWriter, status int) {
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeError(w, status, "fake error "+strconv.Itoa(status))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	var e apiError
	e.Error.Message = msg
	e.Error.Type = errorType(status)
	w.Header().Set("X-Request-Id", "req_fake_error")
	_ = fakehttp.WriteJSON(w, status, e)
}
