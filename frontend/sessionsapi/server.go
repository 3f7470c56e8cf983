// Package sessionsapi owns the runner's sessions API: HTTP JSON under /v1
// for sessions of every agent kind (list, create, get, prompt, interrupt,
// close, messages, diff) and their approvals (list pending, resolve), and
// each session's canonical events, and every session's, as Server-Sent
// Events or over WebSocket, resuming from any seq (Last-Event-ID, ?after)
// with nothing lost or repeated. Its
// OpenAPI 3.1 document is served at /v1/openapi.json. It is a front end
// over runner/sessions: it knows no agent and does no authentication
// (the server puts it behind the same auth as protocol v1).
package sessionsapi

import (
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

//go:embed openapi.json
var openAPI string

// MaxBody is the largest request body accepted, but for a prompt's.
const MaxBody = 1 << 20

// MaxPromptBody is the largest prompt body accepted, a new session's with
// its first prompt included: room for a few images of agent.MaxImageBytes
// each, in base64.
const MaxPromptBody = 32 << 20

// Config configures the API.
type Config struct {
	Sessions sessions.Core
	// Heartbeat is how often an idle event stream sends a comment so
	// proxies keep it open; zero means 15 s.
	Heartbeat time.Duration
	// By names who is asking, for the audit of resolutions (the auth
	// token's name, say); nil leaves it empty.
	By     func(*http.Request) string
	Logger *slog.Logger
	// Observer learns of each live event a session's stream hands to its
	// client (metrics); nil observes nothing.
	Observer Observer
}

// Observer learns of the events a session's stream delivers live: those
// logged after the stream began, not the ones it replays.
type Observer interface {
	EventDelivered(agentName string, e *agent.Event)
}

// Handler serves the API; mount it at "/v1/".
func Handler(cfg Config) http.Handler {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a := &api{cfg: cfg, m: cfg.Sessions}
	mux := http.NewServeMux()
	for _, rt := range a.routes() {
		mux.HandleFunc(rt.method+" "+rt.path, rt.handle)
	}
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return mux
}

// route is one endpoint; the OpenAPI document lists exactly these (a test
// holds them to it).
type route struct {
	method, path string
	handle       http.HandlerFunc
}

func (a *api) routes() []route {
	return []route{
		{"GET", "/v1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, openAPI)
		}},
		{"GET", "/v1/agents", a.agents},
		{"GET", "/v1/sessions", a.list},
		{"POST", "/v1/sessions", a.create},
		{"GET", "/v1/sessions/{id}", a.get},
		{"DELETE", "/v1/sessions/{id}", a.close},
		{"PATCH", "/v1/sessions/{id}", a.configure},
		{"POST", "/v1/sessions/{id}/prompt", a.prompt},
		{"POST", "/v1/sessions/{id}/interrupt", a.interrupt},
		{"POST", "/v1/sessions/{id}/resume", a.resume},
		{"GET", "/v1/sessions/{id}/messages", a.messages},
		{"GET", "/v1/sessions/{id}/diff", a.diff},
		{"GET", "/v1/sessions/{id}/events", a.events},
		{"GET", "/v1/events", a.feed},
		{"GET", "/v1/approvals", a.approvals},
		{"POST", "/v1/sessions/{id}/approvals/{approval}/resolve", a.resolve},
		{"GET", "/v1/runners", a.runners},
		{"POST", "/v1/runners/{name}/drain", a.drain},
	}
}

type api struct {
	cfg Config
	m   sessions.Core
}

func (a *api) agents(w http.ResponseWriter, _ *http.Request) {
	body := map[string]any{"agents": a.m.Agents()}
	if u := a.m.Unavailable(); len(u) > 0 {
		body["unavailable"] = u
	}
	writeJSON(w, http.StatusOK, body)
}

func (a *api) list(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"sessions": a.m.List()})
}

// createBody is POST /v1/sessions.
type createBody struct {
	Agent       string `json:"agent"`
	WorkspaceID string `json:"workspace_id"`
	Model       string `json:"model,omitempty"`
	// Mode is one of the agent's modes to start in.
	Mode   string `json:"mode,omitempty"`
	Resume string `json:"resume,omitempty"`
	// Fork starts a new conversation from the one Resume names.
	Fork bool `json:"fork,omitempty"`
	// Prompt, when set, starts the first turn at once; Images go with it.
	Prompt string      `json:"prompt,omitempty"`
	Images []imageBody `json:"images,omitempty"`
	// Runner, in a fleet, names the runner to start the session on.
	Runner string `json:"runner,omitempty"`
	// MCPServers are MCP servers the agent connects to. Their env and
	// headers may hold the client's secrets: no answer echoes them.
	MCPServers []agent.MCPServer `json:"mcp_servers,omitempty"`
}

func (a *api) create(w http.ResponseWriter, r *http.Request) {
	var body createBody
	if !readJSONUpTo(w, r, &body, MaxPromptBody) {
		return
	}
	switch {
	case body.Agent == "" || body.WorkspaceID == "":
		writeError(w, http.StatusBadRequest, "invalid_request", "agent and workspace_id are required")
		return
	case len(body.Images) > 0 && body.Prompt == "":
		writeError(w, http.StatusBadRequest, "invalid_request", "images go with a prompt")
		return
	}
	// The first prompt is checked before the session starts: one it
	// cannot take starts nothing.
	first, err := promptBody{Text: body.Prompt, Images: body.Images}.prompt()
	if err == nil {
		if caps, ok := a.m.Agents()[body.Agent]; ok {
			err = agent.CheckImages(body.Agent, caps, first)
		}
	}
	if err != nil {
		a.fail(w, err)
		return
	}
	info, err := a.m.Create(r.Context(), sessions.CreateRequest{Agent: body.Agent, WorkspaceID: body.WorkspaceID,
		Model: body.Model, Mode: body.Mode, Resume: body.Resume, Fork: body.Fork, Runner: body.Runner, MCPServers: body.MCPServers})
	if err != nil {
		a.fail(w, err)
		return
	}
	if body.Prompt != "" {
		if err := a.m.Prompt(r.Context(), info.ID, first); err != nil {
			a.fail(w, err)
			return
		}
	}
	writeJSON(w, http.StatusCreated, info)
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	info, err := a.m.Get(r.PathValue("id"))
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (a *api) close(w http.ResponseWriter, r *http.Request) {
	if err := a.m.Close(r.Context(), r.PathValue("id")); err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// promptBody is POST /v1/sessions/{id}/prompt.
type promptBody struct {
	Text string `json:"text"`
	// Images go with the text, for an agent whose capabilities say it
	// takes them.
	Images []imageBody `json:"images,omitempty"`
}

// imageBody is one image of a prompt: its bytes in standard base64. It
// is decoded here, not by encoding/json, so a bad image is an
// invalid_image that says which.
type imageBody struct {
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// prompt is the body as the agent's prompt; a bad image is an
// *agent.InvalidImageError.
func (b promptBody) prompt() (agent.Prompt, error) {
	p := agent.Prompt{Text: b.Text}
	for i, img := range b.Images {
		data, err := base64.StdEncoding.DecodeString(img.Data)
		if err != nil {
			return p, &agent.InvalidImageError{Index: i, MediaType: img.MediaType, Reason: "data is not base64: " + err.Error()}
		}
		p.Images = append(p.Images, agent.Image{MediaType: img.MediaType, Data: data})
	}
	return p, p.ValidateImages()
}

func (a *api) prompt(w http.ResponseWriter, r *http.Request) {
	var body promptBody
	if !readJSONUpTo(w, r, &body, MaxPromptBody) {
		return
	}
	if body.Text == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "text is required")
		return
	}
	p, err := body.prompt()
	if err != nil {
		a.fail(w, err)
		return
	}
	if err := a.m.Prompt(r.Context(), r.PathValue("id"), p); err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// configure changes a running session's mode or model.
func (a *api) configure(w http.ResponseWriter, r *http.Request) {
	var body agent.Settings
	if !readJSON(w, r, &body) {
		return
	}
	if body == (agent.Settings{}) {
		writeError(w, http.StatusBadRequest, "invalid_request", "give a mode or a model to change")
		return
	}
	info, err := a.m.Configure(r.Context(), r.PathValue("id"), body)
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (a *api) interrupt(w http.ResponseWriter, r *http.Request) {
	if err := a.m.Interrupt(r.Context(), r.PathValue("id")); err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// resumeBody is POST /v1/sessions/{id}/resume's optional body.
type resumeBody struct {
	// MCPServers, when given, replace the session's MCP servers (an
	// empty list removes them); without it the session keeps its own.
	MCPServers *[]agent.MCPServer `json:"mcp_servers,omitempty"`
}

// resume starts an ended session again under its id: its agent resumes
// the conversation and its events go on from its last seq. In a fleet, a
// session whose runner was lost is taken over by the runner asked.
func (a *api) resume(w http.ResponseWriter, r *http.Request) {
	var body resumeBody
	if r.ContentLength != 0 && !readJSON(w, r, &body) { // the body is optional
		return
	}
	var info sessions.Info
	var err error
	if body.MCPServers == nil {
		info, err = a.m.Reopen(r.Context(), r.PathValue("id"), 0, false)
	} else if re, ok := a.m.(sessions.MCPReopener); ok {
		info, err = re.ReopenWithMCP(r.Context(), r.PathValue("id"), 0, false, *body.MCPServers)
	} else {
		err = &agent.UnsupportedError{Agent: "this runner", Capability: "resume a session with other MCP servers"}
	}
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (a *api) messages(w http.ResponseWriter, r *http.Request) {
	items, err := a.m.Messages(r.Context(), r.PathValue("id"))
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": nonNil(items)})
}

func (a *api) diff(w http.ResponseWriter, r *http.Request) {
	changes, err := a.m.Diff(r.Context(), r.PathValue("id"))
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"changes": nonNil(changes)})
}

func (a *api) approvals(w http.ResponseWriter, _ *http.Request) {
	recs, err := a.m.Approvals()
	if err != nil {
		a.fail(w, err)
		return
	}
	out := make([]agent.Approval, 0, len(recs))
	for _, rec := range recs {
		out = append(out, rec.Approval)
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": out})
}

// resolveBody is POST …/approvals/{approval}/resolve.
type resolveBody struct {
	Decision agent.Decision `json:"decision"`
	Scope    agent.Scope    `json:"scope,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	Answers  []string       `json:"answers,omitempty"`
	// Input is an allow's edit of the call's input, for agents whose
	// capabilities say edit_input.
	Input json.RawMessage `json:"input,omitempty"`
}

func (a *api) resolve(w http.ResponseWriter, r *http.Request) {
	var body resolveBody
	if !readJSON(w, r, &body) {
		return
	}
	if body.Decision != agent.Allow && body.Decision != agent.Deny {
		writeError(w, http.StatusBadRequest, "invalid_request", `decision must be "allow" or "deny"`)
		return
	}
	res := agent.Resolution{ApprovalID: r.PathValue("approval"), Decision: body.Decision, Scope: body.Scope,
		Reason: body.Reason, Answers: body.Answers, Input: body.Input, Cause: agent.CauseClient}
	if a.cfg.By != nil {
		res.By = a.cfg.By(r)
	}
	won, err := a.m.Resolve(r.Context(), r.PathValue("id"), res)
	var already *agent.AlreadyResolvedError
	switch {
	case errors.As(err, &already):
		writeJSON(w, http.StatusConflict, map[string]any{"error": apiError{Code: "already_resolved", Message: err.Error()},
			"resolution": already.First})
	case err != nil:
		a.fail(w, err)
	default:
		writeJSON(w, http.StatusOK, won)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
