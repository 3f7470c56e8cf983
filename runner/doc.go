// Package runner is the core of `tether serve`: it owns sessions that
// outlive connections, each with a durable sequenced event log, a workspace
// held for the session's life, and an agent started by a driver. It knows
// no wire protocol (front ends store their own frames as events) and no
// particular agent (drivers implement AgentDriver).
//
// A session survives its connection: when the connection drops, the agent
// keeps running and its events keep being logged for GracePeriod; a host
// that attaches again with the last seq it saw receives every later event
// exactly once, in order, and then live events.
package runner
