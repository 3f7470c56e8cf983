package eventlog

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var (
	openBenchBytes = flag.Int64("open-bench-bytes", 64<<20,
		"BenchmarkOpenLarge: size of the payloads of the log it opens")
	openBenchDir = flag.String("open-bench-dir", "",
		"BenchmarkOpenLarge: keep the log it builds in this directory, and use it again on later runs")
)

// BenchmarkOpenLarge measures Open (bbolt's open, the structure check and
// load) on a log of -open-bench-bytes of ~500-byte events in 1000
// sessions, one event per session per commit: the shape of a busy runner,
// and the worst one for an open, since each commit adds a small value to
// every session's leaf pages, so the tree has a page per few events.
func BenchmarkOpenLarge(b *testing.B) {
	dir := *openBenchDir
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("open-bench-%d.db", *openBenchBytes))
	if _, err := os.Stat(path); err != nil {
		buildOpenBench(b, path, *openBenchBytes)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		l, err := Open(path, Options{MaxEventsPerSession: -1})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
}

func buildOpenBench(b *testing.B, path string, size int64) {
	const sessions, payloadLen = 1000, 500
	ctx := context.Background()
	l, err := Open(path+".tmp", Options{MaxEventsPerSession: -1, FlushInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, payloadLen)
	for written := int64(0); written < size; written += sessions * payloadLen {
		for s := range sessions {
			if _, err := l.Append(ctx, fmt.Sprintf("session-%04d", s), payload); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Sync(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		b.Fatal(err)
	}
}
