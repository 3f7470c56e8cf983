package claude

import (
	"testing"

	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// The reader must see every line it handles itself, however it is spelled,
// unless the line starts as a consumer's message: those are left to the
// consumer, which routes them back (TestDisguisedControlLinesAreHandled).
func TestClassifyFindsEveryLineTheReaderHandles(t *testing.T) {
	for line, want := range map[string]string{
		`{"type":"control_request","request_id":"1","request":{"subtype":"can_use_tool"}}`: cc.TypeControlRequest,
		`{"type":"control_response","response":{"subtype":"success","request_id":"1"}}`:    cc.TypeControlResponse,
		`{"type":"control_cancel_request","request_id":"1"}`:                               cc.TypeControlCancelRequest,
		`{"type":"\u0063ontrol_request","request_id":"1"}`:                                 cc.TypeControlRequest,
		`{"request_id":"1","type":"control_request"}`:                                      cc.TypeControlRequest,
		`{"type" : "result","subtype":"success","is_error":true}`:                          cc.TypeResult,
		`{"type":"keep_alive"}`:                                         cc.TypeKeepAlive,
		`{"type":"transcript_mirror","x":1}`:                            cc.TypeTranscriptMirror,
		`{"type":"assistant","message":{"content":[]}}`:                 "",
		`{"type":"user","message":{"content":"tool_result here"}}`:      "",
		`{"type":"stream_event","event":{"type":"content_block_stop"}}`: "",
		`{"type":"system","subtype":"init"}`:                            "",
		`{"type":"assistantX","message":{}}`:                            "assistantX",
	} {
		if got := classify([]byte(line)); got != want {
			t.Errorf("classify(%s) = %q, want %q", line, got, want)
		}
	}
}
