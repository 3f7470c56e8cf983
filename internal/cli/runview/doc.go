// Package runview owns what a person sees and answers in a terminal while
// one agent turn runs: `tether run`. It starts the session — Claude Code
// through the claude SDK, or any agent.Driver (Config.Driver) through its
// canonical events — streams the assistant's text as it arrives, shows
// each tool call and its result as compact lines, asks for tool approval
// (and a driver's questions), turns Ctrl-C into an interrupt (then a
// cancel), keeps a spinner on stderr while nothing else is happening, and
// ends with one summary line and an exit code. With JSON it prints the
// canonical events instead, one per line; with Raw the agent's own lines.
//
// Everything it touches is injected through Config (writers, the answer
// reader, terminal flags, the clock, the Ctrl-C channel), so tests drive it
// exactly as the command does, against the mock agent as a real subprocess.
//
// Exit codes (ExitOK, ExitFailed, ExitUsage, ExitCancelled): 0 the turn
// succeeded; 1 the turn failed, was interrupted once, or the session could
// not run; 2 the command line was wrong; 130 a second Ctrl-C cancelled
// everything.
package runview
