package auth

import (
	"encoding/json"
	"log/slog"
	"net/http"
)

// LoopbackHosts lets through requests whose Host names loopback
// (localhost, 127.0.0.0/8, ::1, any port), and answers every other one 403
// with a JSON error body. It is for a runner listening on loopback: there a
// Host of any other name is a page on a name its attacker points at
// 127.0.0.1 (DNS rebinding), whose Origin matches its Host and so passes
// the WebSocket origin check. A runner listening beyond loopback cannot
// tell its own names from an attacker's and relies on its token (a page
// cannot put an Authorization header on a WebSocket upgrade). log (nil:
// none) gets one warning per refusal, naming the Host and the remote
// address.
func LoopbackHosts(log *slog.Logger, next http.Handler) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsLoopback(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		log.Warn("request refused: Host is not a loopback name", "host", r.Host, "remote", r.RemoteAddr, "path", r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(errorBody{Error: "forbidden_host",
			Message: "this runner listens on loopback and answers only Host localhost, 127.0.0.0/8 or ::1"})
	})
}
