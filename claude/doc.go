// Package claude is the Go SDK for the Claude Code CLI. It starts the CLI (or
// reaches it through any transport.Transport), performs the initialize
// handshake, streams parsed messages as iter.Seq2 values, and speaks the full
// control protocol in both directions: interrupt, model and permission-mode
// changes, MCP status and the rest outbound; permission callbacks, hook
// callbacks and in-process MCP servers inbound.
//
// One-shot:
//
//	for msg, err := range claude.Query(ctx, "say hi", claude.Options{}) { … }
//
// Conversations: Connect returns a Client that keeps one CLI process for
// many turns.
package claude

import cc "github.com/tetherhq/tether/protocol/claudecode"

// Message types, re-exported so callers need only this package.
type (
	Message          = cc.Message
	SystemMessage    = cc.SystemMessage
	AssistantMessage = cc.AssistantMessage
	UserMessage      = cc.UserMessage
	ResultMessage    = cc.ResultMessage
	StreamEvent      = cc.StreamEvent
	UnknownMessage   = cc.Unknown
	Content          = cc.Content
	ContentBlock     = cc.ContentBlock
	TextBlock        = cc.TextBlock
	ToolUseBlock     = cc.ToolUseBlock
	ToolResultBlock  = cc.ToolResultBlock
	Usage            = cc.Usage
	PermissionUpdate = cc.PermissionUpdate
	PermissionRule   = cc.PermissionRule
	AgentDefinition  = cc.AgentDefinition
	HookInput        = cc.HookInput
	HookOutput       = cc.HookOutput
	HookSpecific     = cc.HookSpecificOutput
	ServerInfo       = cc.InitializeResponse
	MCPServerStatus  = cc.MCPServerStatus
	RewindResult     = cc.RewindFilesResponse
	UserInput        = cc.UserInput
)
