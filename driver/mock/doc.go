// Package mock is a scripted agent as an agent.Driver, named "mock": it
// runs in process (no subprocess, no model, no network) and produces every
// canonical event kind and item type, deterministically, for clients and
// tests that need a whole agent without a model.
//
// Each prompt is one turn: turn.started, the user_message item, a
// reasoning item with deltas, a plan, a command (made up: nothing runs on
// the machine), a file change (really written: one line appended to
// mock-notes.md in the workspace, so Diff has something to show), a
// tool_call, the reply as a message streamed in deltas, usage, and
// turn.completed. Words in the prompt change the script:
//
//   - REQUEST_APPROVAL: the tool call asks an approval (kind tool, scopes
//     once and session) first; allowed it completes, denied it completes
//     declined and the reply says so. A session-scoped allow lets later
//     calls of the tool run without asking.
//   - ASK_QUESTION: a question item opens a question approval; the chosen
//     options show in the reply.
//   - FAIL_TURN: an error event (retrying), then the turn fails with an
//     api_error, status 500.
//   - SLOW: the turn waits, on its context and not on the clock, until it
//     is interrupted or the session closes.
//
// A prompt may carry images: the reply says how many came, with their
// media types and sizes ("You sent 1 image (image/png 68 bytes).").
//
// Conversations are kept in memory by native id within a Driver, so a
// later Start may resume one (its items, its workspace changes); with the
// option {"turns": N} a resume of a conversation the Driver does not hold
// (another process's) continues it from that script position, at turn
// N+1. Without a
// workspace the file change fails (and the reply says so). docs/mock.md
// lists the events of a turn.
//
// The package registers the agent kind "mock" (package driver): built in,
// so every runner offers it.
package mock
