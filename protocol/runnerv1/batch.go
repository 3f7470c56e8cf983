package runnerv1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// A batch frame on the wire puts each frame it carries on a line of its
// own, so a reader splits it without scanning the JSON:
//
//	{"seq":7,"n":3,"type":"batch","frames":[
//	{"type":"message","request_id":"q1","line":{…}}
//	,{"type":"message","request_id":"q1","line":{…}}
//	,{"type":"done","request_id":"q1","reason":"completed"}
//	]}
//
// n is the number of frames; the first has seq 7, the next 8, and so on.
// It is one JSON object like every other frame, so Decode reads it too.
var (
	batchHead = []byte(`,"type":"batch","frames":[`)
	batchSep  = []byte("\n,")
	batchEnd  = []byte("\n]}")
)

// AppendBatch encodes a batch frame around frames encoded as the runner
// logs them (without seq), the first of them numbered seq.
func AppendBatch(dst []byte, seq uint64, frames [][]byte) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `,"n":`...)
	dst = strconv.AppendUint(dst, uint64(len(frames)), 10)
	dst = append(dst, batchHead...)
	for i, f := range frames {
		if i == 0 {
			dst = append(dst, '\n')
		} else {
			dst = append(dst, batchSep...)
		}
		dst = append(dst, f...)
	}
	return append(dst, batchEnd...)
}

// SplitBatch is the fast path for the frames AppendBatch produces: it
// returns the first frame's seq and the frames, appended to dst and
// aliasing data. ok is false for anything else (use Decode). The frames
// are not validated here: decode each with DecodeRawLine or
// DecodeBatchItem.
func SplitBatch(data []byte, dst [][]byte) (seq uint64, frames [][]byte, ok bool) {
	rest, ok := bytes.CutPrefix(data, []byte(`{"seq":`))
	if !ok {
		return 0, dst, false
	}
	if seq, rest, ok = cutSeq(rest); !ok {
		return 0, dst, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"n":`)); !ok {
		return 0, dst, false
	}
	n, rest, ok := cutSeq(rest)
	if !ok || seq+n-1 < seq {
		return 0, dst, false
	}
	if rest, ok = bytes.CutPrefix(rest, batchHead); !ok {
		return 0, dst, false
	}
	if rest, ok = bytes.CutSuffix(rest, batchEnd); !ok || len(rest) == 0 || rest[0] != '\n' {
		return 0, dst, false
	}
	start := len(dst)
	rest = rest[1:]
	for {
		i := bytes.Index(rest, batchSep)
		if i < 0 {
			break
		}
		dst = append(dst, rest[:i])
		rest = rest[i+len(batchSep):]
		if uint64(len(dst)-start) >= n {
			return 0, dst[:start], false
		}
	}
	dst = append(dst, rest)
	if uint64(len(dst)-start) != n {
		return 0, dst[:start], false
	}
	for _, f := range dst[start:] {
		// A separator inside a frame would have split it: each piece must
		// still look like one object.
		if len(f) < 2 || f[0] != '{' || f[len(f)-1] != '}' {
			return 0, dst[:start], false
		}
	}
	return seq, dst, true
}

// DecodeBatchItem decodes a frame carried by a batch, which gives it seq.
// It must be a frame the runner logs (ready, message, done, error,
// control_response), without a seq of its own.
func DecodeBatchItem(data []byte, seq uint64) (Frame, error) {
	f, err := decode(data, false)
	if err != nil {
		return nil, err
	}
	if FrameSeq(f) != 0 {
		return nil, frameError(CodeInvalidFrame, "a frame in a batch has no seq of its own")
	}
	numbered, ok := withSeq(f, seq)
	if !ok {
		return nil, frameError(CodeInvalidFrame, "a batch holds no %s frames", f.FrameType())
	}
	return numbered, nil
}

// FrameSeq is the seq a frame carries (0 for none); a batch's is its
// first frame's.
func FrameSeq(f Frame) uint64 {
	switch v := f.(type) {
	case Ready:
		return v.Seq
	case Message:
		return v.Seq
	case Done:
		return v.Seq
	case Error:
		return v.Seq
	case ControlResponse:
		return v.Seq
	case Batch:
		return v.Seq
	}
	return 0
}

// withSeq numbers a frame of a kind a batch may carry; ok is false for
// the others.
func withSeq(f Frame, seq uint64) (Frame, bool) {
	switch v := f.(type) {
	case Ready:
		v.Seq = seq
		return v, true
	case Message:
		v.Seq = seq
		return v, true
	case Done:
		v.Seq = seq
		return v, true
	case Error:
		v.Seq = seq
		return v, true
	case ControlResponse:
		v.Seq = seq
		return v, true
	}
	return f, false
}

func decodeBatch(seq, n uint64, raws []json.RawMessage) (Frame, error) {
	if seq == 0 || len(raws) == 0 || n != uint64(len(raws)) || seq+n-1 < seq {
		return nil, frameError(CodeInvalidFrame, "a batch needs a seq, its frames and their number n")
	}
	frames := make([]Frame, len(raws))
	for i, raw := range raws {
		f, err := DecodeBatchItem(raw, seq+uint64(i))
		if err != nil {
			return nil, err
		}
		frames[i] = f
	}
	return Batch{Seq: seq, Frames: frames}, nil
}

func encodeBatch(b Batch) ([]byte, error) {
	if b.Seq == 0 || len(b.Frames) == 0 {
		return nil, fmt.Errorf("runnerv1: encode batch: %w", frameError(CodeInvalidFrame, "a batch needs a seq and frames"))
	}
	encoded := make([][]byte, len(b.Frames))
	for i, f := range b.Frames {
		bare, ok := withSeq(f, 0)
		if !ok {
			return nil, fmt.Errorf("runnerv1: encode batch: %w", frameError(CodeInvalidFrame, "a batch holds no %s frames", f.FrameType()))
		}
		e, err := Encode(bare)
		if err != nil {
			return nil, err
		}
		encoded[i] = e
	}
	return AppendBatch(nil, b.Seq, encoded), nil
}
