// Package e2e holds end-to-end tests: a real runner (server.Run) with the
// real Claude Code CLI against a fake model API, driven through the Go SDK
// (claude.Options.Runner) and through a raw protocol v1 client. Everything
// listens on loopback. Tests that need the real CLI are named TestRealCLI*
// and skip without it.
package e2e
