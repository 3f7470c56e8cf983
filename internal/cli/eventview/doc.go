// Package eventview owns how canonical agent events read for a person on
// a terminal, for every agent alike: `tether attach` prints one line per
// completed item (Compact), `tether run --agent` streams the agent's text
// as it comes and shows each command, file change and tool call as a line
// when it starts and its result when it completes (Live). It also holds
// the one-line summaries both use (a tool call, a command's output).
//
// The package only formats: what it prints goes to a Writer the caller
// owns (a plain io.Writer, or the console's shared screen).
package eventview
