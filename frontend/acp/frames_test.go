package acp_test

import (
	"errors"
	"testing"

	"github.com/tetherhq/tether/frontend/acp"
)

func TestCheckFrame(t *testing.T) {
	for _, tc := range []struct {
		line string
		code int // 0: accepted
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, 0},
		{`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, 0},
		{`{"jsonrpc":"2.0","id":"a","result":{}}`, 0},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`, 0},
		{`{"jsonrpc":"2.0","id":1,"method":`, -32700},
		{`not json`, -32700},
		{`[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, -32600},
		{`"a string"`, -32600},
		{`{"id":1,"method":"initialize"}`, -32600},
		{`{"jsonrpc":"1.0","id":1,"method":"initialize"}`, -32600},
		{`{"jsonrpc":"2.0","id":{},"method":"initialize"}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"method":7}`, -32600},
	} {
		err := acp.CheckFrame([]byte(tc.line))
		var fe *acp.FrameError
		switch {
		case tc.code == 0 && err != nil:
			t.Errorf("%s: refused: %v", tc.line, err)
		case tc.code != 0 && (!errors.As(err, &fe) || fe.Code != tc.code):
			t.Errorf("%s: %v, want code %d", tc.line, err, tc.code)
		}
	}
}

// FuzzCheckFrame: any line is accepted or refused with a JSON-RPC code,
// never a panic.
func FuzzCheckFrame(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"initialize"}`, `{`, `[]`, `{"jsonrpc":"2.0","id":[1]}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		err := acp.CheckFrame(line)
		var fe *acp.FrameError
		if err != nil && (!errors.As(err, &fe) || (fe.Code != -32700 && fe.Code != -32600)) {
			t.Fatalf("%q: %v", line, err)
		}
	})
}
