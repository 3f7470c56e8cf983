package sessionsapi

import (
	"net/http"

	"github.com/tetherhq/tether/runner/sessions"
)

// fleet is the core's fleet side, when it has one.
func (a *api) fleet(w http.ResponseWriter) (sessions.Fleet, bool) {
	f, ok := a.m.(sessions.Fleet)
	if !ok {
		writeError(w, http.StatusNotFound, "no_fleet", "this runner is not in a fleet (tether serve --nats or --nats-config)")
	}
	return f, ok
}

func (a *api) runners(w http.ResponseWriter, r *http.Request) {
	f, ok := a.fleet(w)
	if !ok {
		return
	}
	runners, err := f.Runners(r.Context())
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"runners": runners})
}

type drainBody struct {
	Drain *bool `json:"drain"`
}

func (a *api) drain(w http.ResponseWriter, r *http.Request) {
	f, ok := a.fleet(w)
	if !ok {
		return
	}
	var body drainBody
	if r.ContentLength != 0 && !readJSON(w, r, &body) { // the body is optional
		return
	}
	drain := body.Drain == nil || *body.Drain
	name := r.PathValue("name")
	if err := f.Drain(r.Context(), name, drain); err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"runner": name, "draining": drain})
}
