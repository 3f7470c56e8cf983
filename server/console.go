package server

import (
	"net/http"

	"github.com/tetherhq/tether/frontend/console"
)

// mountConsole serves the web console at "/": the most general pattern,
// so every other route keeps its own. The console's files need no token
// (they hold nothing of the runner); everything it shows comes from /v1,
// behind auth.
func mountConsole(mux *http.ServeMux) {
	mux.Handle("/", console.Handler())
}
