// Package claudecli is the runner's driver for the Claude Code CLI: it
// validates a host's session options against the runner's policy, builds the
// CLI's command line itself, starts the CLI (inside the sandbox when one is
// configured) and maps it onto the runner's Agent: output lines, turns,
// prompts, control requests and interrupts.
//
// Two modes. By default the driver speaks the control protocol itself
// through the Go SDK (initialize, interrupt, control requests) and the host
// sees the CLI's stdout lines. In relay mode the host's SDK speaks it: every
// stdout line goes to the host and the host's lines go to stdin, except the
// runner's own sandbox hook, which the driver adds to initialize and answers
// itself.
//
// Either way the runner's policy holds: hosts may send only the control
// requests in hostControlSubtypes and (relay) only the line types in
// hostLineTypes, every Bash input a relay host answers with is sandboxed
// like the model's own, and the CLI reads no settings or MCP configuration
// files, which the agent itself could write.
//
// The package registers the agent kind "claude" (package driver): its CLI,
// found where Claude Code installs itself too, and its slice of the
// runner's environment, the Anthropic key behind the runner's proxy when
// sandboxed.
package claudecli
