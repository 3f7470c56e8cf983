package mast

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	segjson "github.com/segmentio/encoding/json"
)

// The daemon writes its frames with segmentio/encoding (half the
// allocations of encoding/json on mast.*'s maps): the bytes must be the
// standard library's, map keys sorted, for every projected event.
func TestFramesEncodeAsTheStandardLibrary(t *testing.T) {
	n := 0
	for name, evs := range mappingExamples() {
		st := newFeedState()
		for _, e := range evs {
			events, stamps := st.apply(feedEvent(e))
			for i, m := range events {
				f := EventFrame{Type: "event", Event: m, Timestamp: Timestamp(time.UnixMicro(stamps[i]))}
				std, err1 := json.Marshal(f)
				seg, err2 := segjson.Marshal(f)
				if err1 != nil || err2 != nil || !bytes.Equal(std, seg) {
					t.Fatalf("%s: encoding/json %s (%v)\nsegmentio     %s (%v)", name, std, err1, seg, err2)
				}
				n++
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d frames compared", n)
	}
}
