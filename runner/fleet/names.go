package fleet

import (
	"encoding/base64"
	"strings"
)

// The stream, buckets and subjects the fleet uses. Every runner of a
// fleet must agree on them; they are part of docs/fleet.md.
const (
	eventStream   = "TETHER_EVENTS"
	eventSubjects = "tether.events.*"
	// liveSubjects is where the stream republishes what it stored, for
	// readers that follow a session live.
	liveSubjects    = "tether.live.{{wildcard(1)}}"
	sessionsBucket  = "tether-sessions"
	runnersBucket   = "tether-runners"
	approvalsBucket = "tether-approvals"

	// headers of an event message
	seqHeader    = "Tether-Seq"    // the last event's seq
	runnerHeader = "Tether-Runner" // the runner that wrote it
	eventsHeader = "Tether-Events" // how many events a batch holds (absent: one)
)

// token makes a session id or runner name one subject token and a valid
// KV key: ids of letters, digits, '-' and '_' stay as they are (every id
// the core makes); anything else is base64url behind a '='.
func token(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == "" {
		return s
	}
	return "=" + base64.RawURLEncoding.EncodeToString([]byte(s))
}

func eventSubject(session string) string { return "tether.events." + token(session) }
func liveSubject(session string) string  { return "tether.live." + token(session) }

// rpcSubject is where runner name takes commands, for itself (create,
// drain) and for the sessions it owns, which the registry names: one
// subscription a runner, not one a session, which cost each node of the
// cluster memory for every session.
func rpcSubject(runner string) string { return "tether.rpc." + token(runner) }

// approvalKey names one approval in its bucket.
func approvalKey(session, id string) string { return token(session) + "." + token(id) }
