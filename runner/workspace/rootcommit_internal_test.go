package workspace

import (
	"bytes"
	"compress/zlib"
	"io"
	"strings"
	"testing"
)

// The stored-block zlib stream decodes to its input, across the 64 KiB
// block limit too.
func TestZlibStored(t *testing.T) {
	for _, n := range []int{0, 1, 300, 0xffff, 0xffff + 1, 3*0xffff + 7} {
		data := []byte(strings.Repeat("tether ", n/7+1)[:n])
		r, err := zlib.NewReader(bytes.NewReader(zlibStored(data)))
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: got %d bytes, %v", n, len(got), err)
		}
	}
}
