package auth

import (
	"context"
	"encoding/json"
	"net/http"
)

type idKey struct{}

// Middleware lets through requests that carry one of t's tokens, and
// answers every other request 401 with "WWW-Authenticate: Bearer" and a
// JSON error body. The token's id is in the request's context (see
// IDFromContext). When t is Empty every request passes: RequireForAddr
// keeps that to loopback listeners.
func Middleware(t *Tokens, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t.Empty() {
			next.ServeHTTP(w, r)
			return
		}
		id, ok := t.Check(r)
		if !ok {
			unauthorized(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), idKey{}, id)))
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

func unauthorized(w http.ResponseWriter, r *http.Request) {
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
}
