package claudecli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrRefused matches host requests the runner does not pass to the agent.
var ErrRefused = errors.New("claudecli: refused by the runner")

// hostControlSubtypes are the control requests a host may send the CLI
// (initialize only in relay sessions, where the host's SDK speaks the
// protocol). Everything else is refused: several would let a host run
// commands or change what the runner decides, outside the sandbox's Bash
// rewrite and the session's options — mcp_set_servers (a stdio server is
// any command), apply_flag_settings (command hooks, env), plugin_install,
// read_file, …
var hostControlSubtypes = map[string]bool{
	"interrupt": true, "set_model": true, "set_permission_mode": true, "set_max_thinking_tokens": true,
	"mcp_status": true, "mcp_reconnect": true, "mcp_toggle": true, "rewind_files": true,
	"stop_task": true, "get_context_usage": true, "cancel_async_message": true,
}

// checkControlSubtype refuses a control request a host may not send.
func checkControlSubtype(subtype string) error {
	if !hostControlSubtypes[subtype] {
		return fmt.Errorf("%w: control request %q", ErrRefused, subtype)
	}
	return nil
}

// hostLineTypes are the stdin lines a relay host may write. The CLI takes
// more (bash_command runs a shell command with no permission check and no
// sandbox rewrite; update_environment_variables, assistant, system, …),
// none of which a host needs.
var hostLineTypes = map[string]bool{
	"user": true, "control_request": true, "control_response": true,
	"control_cancel_request": true, "keep_alive": true,
}

// decodeLine parses one JSON object keeping numbers exact.
func decodeLine(line []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value on the line")
	}
	return m, nil
}

// encodeLine is json.Marshal without HTML escaping and without a newline.
func encodeLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
