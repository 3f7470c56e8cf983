package eventlog

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkAppend measures appends of 1 KiB payloads until they are on
// disk: the final Sync is inside the timed region.
func BenchmarkAppend(b *testing.B) {
	payload := make([]byte, 1024)
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		l, _ := open(b, Options{})
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Append(ctx, "s", payload); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("parallel-8-sessions", func(b *testing.B) {
		l, _ := open(b, Options{})
		var next atomic.Int64
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		b.SetParallelism(4) // 4 × GOMAXPROCS appenders
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			session := fmt.Sprintf("s%d", next.Add(1)%8)
			for pb.Next() {
				if _, err := l.Append(ctx, session, payload); err != nil {
					b.Error(err)
					return
				}
			}
		})
		if err := l.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkReplay100k appends 100k frames of ~500 bytes once, then
// measures reading all of them back (from disk, as after a restart).
func BenchmarkReplay100k(b *testing.B) {
	const frames = 100_000
	ctx := context.Background()
	l, _ := open(b, Options{})
	batch := make([][]byte, 1000)
	for i := range batch {
		batch[i] = make([]byte, 500)
		copy(batch[i], fmt.Sprintf(`{"type":"assistant","n":%d,"text":"`, i))
	}
	for range frames / len(batch) {
		if _, err := l.AppendBatch(ctx, "s", batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(frames * 500)
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for ev, err := range l.Read(ctx, "s", 0) {
			if err != nil {
				b.Fatal(err)
			}
			n += len(ev.Payload) / len(ev.Payload)
		}
		if n != frames {
			b.Fatalf("replayed %d frames, want %d", n, frames)
		}
	}
	b.ReportMetric(float64(frames*b.N)/b.Elapsed().Seconds(), "frames/s")
}
