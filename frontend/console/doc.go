// Package console owns the runner's web console: plain HTML, CSS and
// JavaScript, embedded in the binary and served at "/" of `tether serve`.
// The page is a client of the sessions API under /v1 (package
// sessionsapi) and nothing else: it signs in with a runner token kept in
// the tab's sessionStorage and sent only in Authorization headers (event
// streams are read with fetch(), which can set headers, rather than
// EventSource or a browser WebSocket, which cannot), lists sessions across
// agents, starts sessions, follows a session's canonical events from the
// last seq it saw, and answers approvals.
//
// There is no build step: the files under static/ are what the browser
// runs, so nothing checked in can go stale. Serving them needs no token:
// they hold no data of the runner.
package console
