package codexapp_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tetherhq/tether/protocol/codexapp"
)

// FuzzDecode: any input decodes to a message or a *DecodeError of one of
// the kinds, never a panic; a decoded message keeps its line as Raw, and
// its Raw decodes again to a message of the same kind and method. The seed
// corpus is every line of the captures and testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"app-server-approval-interrupt.transcript.jsonl", "app-server-decline-error-steer.transcript.jsonl"} {
		for _, l := range readTranscript(f, name) {
			f.Add([]byte(l.Msg))
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		in := bytes.Clone(line)
		msg, err := codexapp.Decode(in)
		if err != nil {
			var de *codexapp.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			kinds := 0
			for _, k := range []error{codexapp.ErrNotJSON, codexapp.ErrNotObject, codexapp.ErrNotMessage, codexapp.ErrBadEnvelope, codexapp.ErrBadParams} {
				if errors.Is(err, k) {
					kinds++
				}
			}
			if kinds != 1 {
				t.Fatalf("error %v matches %d kinds", err, kinds)
			}
			if msg == nil {
				return
			}
			if !errors.Is(err, codexapp.ErrBadParams) {
				t.Fatalf("a message with %v", err)
			}
		}
		if !bytes.Equal(msg.Raw(), line) {
			t.Fatalf("Raw %q, line %q", msg.Raw(), line)
		}
		again, err2 := codexapp.Decode(bytes.Clone(msg.Raw()))
		if again == nil || (err == nil) != (err2 == nil) || method(again) != method(msg) {
			t.Fatalf("decoding Raw again: %v %v (first %v)", again, err2, err)
		}
	})
}

func method(m codexapp.Message) string {
	switch x := m.(type) {
	case *codexapp.Request:
		return "request " + x.Method
	case *codexapp.Notification:
		return "notification " + x.Method
	case *codexapp.Response:
		return "response " + x.ID.String()
	}
	return ""
}
