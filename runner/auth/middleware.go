package auth

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
)

type idKey struct{}

// Middleware lets through requests that carry one of t's tokens, and
// answers every other request 401 with "WWW-Authenticate: Bearer" and a
// JSON error body; with t Empty, that is every request. The token's id is
// in the request's context (see IDFromContext). log (nil: none) gets one
// warning per refusal, with the remote address and why, never what the
// request carried. A request whose token Tokens.Replace drops while it runs
// has its context ended with ErrTokenRevoked as the cause: streams and
// WebSockets that follow their request's context close.
func Middleware(t *Tokens, log *slog.Logger, next http.Handler) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := t.Check(r)
		ctx, end := context.WithCancelCause(context.WithValue(r.Context(), idKey{}, id))
		defer end(nil)
		var done func()
		if ok {
			done, ok = t.admit(id, end)
		}
		if !ok {
			msg := unauthorized(w, r)
			log.Warn("connection refused", "status", http.StatusUnauthorized, "reason", msg, "remote", r.RemoteAddr, "path", r.URL.Path)
			return
		}
		defer done()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// IDFromContext returns the id of the token Middleware accepted.
func IDFromContext(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(idKey{}).(string)
	return id, ok
}

type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// unauthorized answers 401 and returns the reason it gave.
func unauthorized(w http.ResponseWriter, r *http.Request) string {
	challenge := `Bearer realm="tether"`
	msg := "missing bearer token"
	if len(r.Header.Values("Authorization")) > 0 {
		// RFC 6750 §3.1: a token was presented but is not accepted.
		challenge += `, error="invalid_token"`
		msg = "invalid bearer token"
	}
	w.Header().Set("WWW-Authenticate", challenge)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(errorBody{Error: "unauthorized", Message: msg})
	return msg
}
