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

// The message and content types are those of package claudecode (the
// CLI's wire format), under the same names, so callers need only this
// package. `go doc claudecode.<Type>` lists their fields.

// Message is one parsed line of the CLI's output: a *SystemMessage,
// *AssistantMessage, *UserMessage, *ResultMessage, *StreamEvent or, for a
// type this SDK does not model, an *UnknownMessage. Raw returns the
// line's exact bytes.
type Message = cc.Message

// SystemMessage is a "system" line: the session's init (model, tools, MCP
// servers, permission mode), compaction boundaries, task notifications,
// hook events; Subtype says which.
type SystemMessage = cc.SystemMessage

// AssistantMessage is one whole model reply: text, thinking and tool
// calls in Message.Content.
type AssistantMessage = cc.AssistantMessage

// UserMessage is a user turn echoed back; during a turn it carries tool
// results (ToolResultBlock) back to the model.
type UserMessage = cc.UserMessage

// ResultMessage ends a turn: its text, cost, usage, duration, and whether
// it failed (IsError; ResultErr says why). A model API failure arrives as
// subtype "success" with IsError set and APIErrorStatus; see APIError.
type ResultMessage = cc.ResultMessage

// StreamEvent is a raw streaming event of the model API (text and tool
// input deltas), sent with Options.IncludePartialMessages.
type StreamEvent = cc.StreamEvent

// UnknownMessage is a line of a type this SDK does not model (a newer
// CLI, say): kept, never dropped, with its raw bytes.
type UnknownMessage = cc.Unknown

// Content is a message's list of blocks; a plain string decodes as one
// TextBlock.
type Content = cc.Content

// ContentBlock is one block of a message's content: *TextBlock,
// *ToolUseBlock, *ToolResultBlock, a thinking block, or an unknown block
// kept as it came.
type ContentBlock = cc.ContentBlock

// TextBlock is plain text in a message.
type TextBlock = cc.TextBlock

// ToolUseBlock is the model calling a tool: its id, name and JSON input.
type ToolUseBlock = cc.ToolUseBlock

// ToolResultBlock is a tool's output sent back to the model, matched to
// its call by ToolUseID; IsError marks a failed or refused call.
type ToolResultBlock = cc.ToolResultBlock

// Usage is token usage as the model API reports it (input, output, cache
// reads and writes).
type Usage = cc.Usage

// PermissionUpdate changes permission rules, the permission mode or the
// allowed directories; a CanUseTool answer may carry some, and the CLI
// suggests some in PermissionRequest.Suggestions.
type PermissionUpdate = cc.PermissionUpdate

// PermissionRule names a tool and, optionally, a pattern of its input
// ("Bash" with "npm test:*").
type PermissionRule = cc.PermissionRule

// AgentDefinition describes a custom subagent for Options.Agents: its
// description, prompt, tools and model.
type AgentDefinition = cc.AgentDefinition

// HookInput is what a hook function receives: the event name, session
// and working directory, and the event's own fields (tool name and input
// for PreToolUse, its response for PostToolUse, …).
type HookInput = cc.HookInput

// HookOutput is a hook function's answer; the zero value lets the CLI
// carry on unchanged. DenyTool, RewriteToolInput and AskEveryTool build
// the common ones.
type HookOutput = cc.HookOutput

// HookSpecific is the per-event part of a HookOutput: for PreToolUse a
// permission decision ("allow", "deny", "ask"), its reason and an updated
// tool input.
type HookSpecific = cc.HookSpecificOutput

// ServerInfo is the CLI's answer to initialize: its slash commands,
// models, output styles and account; see Client.ServerInfo.
type ServerInfo = cc.InitializeResponse

// MCPServerStatus is one MCP server and its connection status, as the
// session's init and Client.MCPStatus list them.
type MCPServerStatus = cc.MCPServerStatus

// RewindResult answers Client.RewindFiles: whether the files could be
// rewound, and which changed.
type RewindResult = cc.RewindFilesResponse

// UserInput is a user turn with content blocks (text, images) and
// optional fields, for Client.Send.
type UserInput = cc.UserInput
