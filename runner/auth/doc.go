// Package auth owns how the runner authenticates hosts: which bearer tokens
// it accepts (from the environment and a file, several at once so they can
// be rotated, and replaced while the runner serves, which ends every
// request of a token dropped), the constant-time check of a request's Authorization header,
// the rule that a runner listening beyond loopback must have a token, the
// token a runner generates when none is configured (kept in its data
// directory) and how a host on the same machine finds it, the Host check
// of a loopback runner (against DNS rebinding), and the number of
// connections each token may hold at once.
//
// Tokens are secrets: nothing in this package logs or prints one, and only
// LocalToken, for the host that will send it, returns one. Each token has a
// short non-secret id (a fingerprint) for logs and limits.
package auth
