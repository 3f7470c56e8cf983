package opencode_test

import (
	"bytes"
	"io"
	"testing"

	oc "github.com/tetherhq/tether/protocol/opencode"
)

// BenchmarkEventReader reads and decodes the whole basic capture (two turns
// and the plugin noise of a first prompt).
func BenchmarkEventReader(b *testing.B) {
	capture, err := readTestdata("serve-event-basic.sse")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(capture)))
	b.ReportAllocs()
	for b.Loop() {
		r := oc.NewEventReader(bytes.NewReader(capture), 0)
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDecodeDelta decodes one text delta, the most frequent event of a
// streaming answer.
func BenchmarkDecodeDelta(b *testing.B) {
	data := []byte(`{"id":"evt_201865ae5001F9iFYSfEbxKScO","type":"message.part.delta","properties":{"sessionID":"ses_dfe79a834ffejhBErzxOqoB3Zv","messageID":"msg_2018658170011g0eD8NfDOd89i","partID":"prt_201865ae1001CnA7dK00hEu9o4","field":"text","delta":"hi there"}}`)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := oc.DecodeEvent(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSSEReaderLargeEvent reads one 8 MiB event (a big tool output) in
// 32 KiB reads, as an HTTP body gives it.
func BenchmarkSSEReaderLargeEvent(b *testing.B) {
	stream := append(append([]byte("data: "), bytes.Repeat([]byte("x"), 8<<20)...), "\n\n"...)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := oc.NewSSEReader(&chunkReader{data: stream, size: 32 << 10}, 0)
		if ev, err := r.Next(); err != nil || len(ev.Data) != 8<<20 {
			b.Fatal(err)
		}
	}
}

type chunkReader struct {
	data []byte
	size int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.size)], c.data)
	c.data = c.data[n:]
	return n, nil
}
