package ndjson

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"testing"
)

// Read throughput on streams of ordinary and long lines, from memory and
// through a pipe (where each read returns what the writer has put in):
//
//	go test -run '^$' -bench . -benchmem ./protocol/ndjson
func BenchmarkReadLine(b *testing.B) {
	for _, size := range []int{100, 10_000, 1_000_000} {
		line := append(bytes.Repeat([]byte("x"), size), '\n')
		stream := bytes.Repeat(line, max(1, (8<<20)/len(line)))
		b.Run("memory/"+strconv.Itoa(size), func(b *testing.B) {
			benchRead(b, len(line), func() (io.Reader, func()) { return bytes.NewReader(stream), func() {} })
		})
		b.Run("pipe/"+strconv.Itoa(size), func(b *testing.B) {
			benchRead(b, len(line), func() (io.Reader, func()) { return pipeOf(b, stream) })
		})
	}
}

// benchRead reads lines of lineLen bytes (newline included) from the
// streams open returns, reopening each at its end.
func benchRead(b *testing.B, lineLen int, open func() (io.Reader, func())) {
	b.SetBytes(int64(lineLen))
	b.ReportAllocs()
	src, done := open()
	r := NewReader(src, 0)
	for b.Loop() {
		line, err := r.ReadLine()
		if err == io.EOF {
			done()
			src, done = open()
			r = NewReader(src, 0)
			line, err = r.ReadLine()
		}
		if err != nil || len(line) != lineLen-1 {
			b.Fatalf("line of %d bytes, %v", len(line), err)
		}
	}
	done()
}

// pipeOf returns the read end of a pipe a goroutine writes stream into;
// done closes it and waits for the writer.
func pipeOf(b *testing.B, stream []byte) (io.Reader, func()) {
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		_, _ = pw.Write(stream)
		_ = pw.Close()
	}()
	return pr, func() {
		_ = pr.Close()
		<-wrote
	}
}
