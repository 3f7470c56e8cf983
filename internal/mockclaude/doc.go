// Package mockclaude owns a scripted stand-in for the `claude` CLI that speaks
// the real stream-json protocol (NDJSON on stdin/stdout plus the two-way
// control protocol) without any model or API key.
//
// It has two users. `tether run --mock` runs it as a real subprocess so a
// newcomer sees the whole product work offline (the "demo" scenario). SDK
// tests run it as a subprocess to produce failure modes the real CLI will not
// produce on demand.
//
// The messages it writes have the shapes and field names of real captures
// from CLI 2.1.197 (see shared/transcripts/claude beside the repository). Run drives one mock
// process over any reader and writers; Main wires it to the real process
// (os.Args, environment, stdio, SIGTERM/SIGINT).
//
// # Protocol (every scenario)
//
// stdin is NDJSON; blank lines are skipped and bad lines noted on stderr.
// control_request initialize is answered with commands, agents, models,
// account, output_style, available_output_styles and pid (a repeat returns
// the same payload). interrupt stops the turn in progress (partial
// assistant, "[Request interrupted by user]", result error_during_execution
// with terminal_reason aborted_streaming). set_model changes the model of
// the next system/init; set_permission_mode answers {mode} and writes
// system/status; mcp_status, get_context_usage and rewind_files answer
// plausibly; other subtypes get "Unsupported control request subtype: X".
// Each user line is a turn: system/init, the scenario's messages, result.
// control_response lines answer the mock's own requests by request_id.
// stdin EOF finishes the queued turns and exits 0; requests still waiting
// for an answer then fail with "Stream closed", as in the real CLI.
//
// # Scenarios (Config.Scenario or TETHER_MOCK_SCENARIO)
//
//	demo            default; streamed reply echoing the prompt, a Write of
//	                hello.txt in Cwd through can_use_tool (with
//	                --permission-prompt-tool stdio) or the permission mode,
//	                a closing text, result with num_turns 2
//	text            TETHER_MOCK_N assistant messages of TETHER_MOCK_SIZE
//	                bytes (default one "Hello from the mock."), result
//	slow            50 chunks with Delay between (default 50ms); interruptible
//	crash-midline   system/init, half a JSON line, stderr note, exit 1
//	crash           system/init, one assistant, stderr note, exit 3
//	huge-line       one assistant whose text is TETHER_MOCK_SIZE bytes
//	                (default 50 MiB), streamed in 64 KiB pieces, then result
//	junk            non-JSON, blank, null, 42, [1], "s", {} and an unknown
//	                type between the real messages, then result
//	linger          like text, but ignores stdin EOF until ctx is done
//	close-stdout    like text; at stdin EOF closes stdout and stays alive
//	no-init         like text, but never answers initialize
//	exit0-noresult  system/init, one assistant, exit 0 without a result
//	hook            Bash tool_use, a hook_callback per PreToolUse callback id
//	                registered in initialize; answers reported in the final text
//	mcp             mcp_message round trips (initialize,
//	                notifications/initialized, tools/list, tools/call of the
//	                first tool with TETHER_MOCK_TOOL_ARGS) for each SDK MCP
//	                server; the tool's text is reported in the final text
//
// TETHER_MOCK_DELAY_MS sets Delay. A test binary can serve as the mock by
// calling os.Exit(Main()) from TestMain when TETHER_MOCKCLAUDE_MAIN=1.
package mockclaude
