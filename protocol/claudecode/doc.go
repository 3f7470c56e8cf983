// Package claudecode owns the Claude Code CLI's stream-json wire format: the
// messages it prints on stdout, the lines it reads on stdin, and the two-way
// control protocol (requests, responses and cancellations in both
// directions). It is pure: it encodes and decodes bytes and never starts a
// process or touches the network.
//
// Every parsed message keeps the exact line it came from (Raw), so a relay can
// forward it without re-encoding, and types or content blocks this package
// does not know are kept as Unknown values instead of being dropped.
//
// Decoded strings and raw values alias the line they came from instead of
// copying it, so a 50 MB tool result costs 50 MB once. Parse gives every
// message its own line, which makes this safe; whoever decodes these types
// from a buffer of their own with encoding/json must not reuse that buffer
// while the values live.
package claudecode
