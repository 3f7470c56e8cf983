package protov1

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"

	v1 "github.com/tetherhq/tether/protocol/runnerv1"
	"github.com/tetherhq/tether/runner"
	"github.com/tetherhq/tether/runner/eventlog"
)

// Bounds of a group of logged frames the writer sends at once, in one
// write: as many WebSocket messages, or batch frames for a host that reads
// them. They keep the writer's memory small.
const (
	groupFrames = 512
	groupBytes  = 256 << 10
)

// A batch frame is at most batchBytes long (a single larger frame goes
// alone). batchBytes starts at minBatchBytes on every connection and
// doubles with every batch sent, up to groupBytes: a host whose
// connections keep dropping still gets whole messages before each drop,
// and one that stays catches up in large ones.
const minBatchBytes = 16 << 10

// writeTimeout bounds one write to the host.
const writeTimeout = 30 * time.Second

// writeEvents sends the session's frames after `after`, then live ones.
func (c *conn) writeEvents(ctx context.Context, sess *runner.Session, after uint64) error {
	for group, err := range sess.EventGroups(ctx, after, groupFrames, groupBytes) {
		if err != nil {
			code := v1.CodeInternal
			if errors.Is(err, eventlog.ErrAhead) {
				code = v1.CodeLastSeqAhead
			}
			c.sendError(ctx, "", code, err.Error())
			return err
		}
		if err := c.writeGroup(ctx, group); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errSessionOver
}

// writeGroup sends a group of logged frames in one write, within
// writeTimeout and ctx: past either the connection is closed, as a
// WebSocket write whose context ends closes it. The group's messages are
// written under one watch of ctx, not one each (a WebSocket write with a
// context that can end arms and disarms a watch of its own every time,
// which costs more than writing a seed client's frame).
func (c *conn) writeGroup(ctx context.Context, group []eventlog.Event) error {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	watch := context.AfterFunc(ctx, func() { _ = c.ws.CloseNow() })
	err := c.writeMessages(context.WithoutCancel(ctx), group)
	if !watch() {
		// ctx ended first and closed the connection: that is the error.
		err = fmt.Errorf("protov1: write: %w", ctx.Err())
	}
	if rerr := c.wire.release(ctx); err == nil {
		err = rerr
	}
	if !full(group) {
		// Caught up, perhaps to go idle: keep no large buffer. A writer
		// that is behind keeps it for the next group.
		c.buf = trimmed(c.buf)
	}
	return err
}

// full reports whether a group was cut at its bounds, which means more
// frames were waiting behind it.
func full(group []eventlog.Event) bool {
	if len(group) >= groupFrames {
		return true
	}
	size := 0
	for _, ev := range group {
		size += len(ev.Payload)
	}
	return size >= groupBytes/2
}

// writeMessages writes the group's messages, all but the last gathered.
func (c *conn) writeMessages(ctx context.Context, group []eventlog.Event) error {
	for len(group) > 0 {
		n := c.encode(group)
		group = group[n:]
		c.wire.gather(len(group) > 0)
		if err := c.ws.Write(ctx, websocket.MessageText, c.buf); err != nil {
			return err
		}
		if n > 1 {
			c.batchBytes = min(2*c.batchBytes, groupBytes)
		}
	}
	return nil
}

// encode puts the next message into c.buf and returns how many of the
// group's events it carries: the first event's frame, or for a host that
// reads batches, a batch of the first events.
func (c *conn) encode(group []eventlog.Event) int {
	n, size := 1, 0
	if c.batch {
		n, size = batchRun(group, c.batchBytes)
	}
	if n == 1 {
		c.buf = v1.WithSeq(c.buf[:0], group[0].Payload, group[0].Seq)
		return 1
	}
	c.items = c.items[:0]
	for _, ev := range group[:n] {
		c.items = append(c.items, ev.Payload)
	}
	need := size
	if size > keepBuf/4 {
		// A large batch: room for the largest this connection sends now,
		// as batches grow and each larger one would allocate again.
		need = max(size, c.batchBytes)
	}
	c.buf = v1.AppendBatch(sized(c.buf, need), group[0].Seq, c.items)
	clear(c.items)
	return n
}

// batchOverhead is about what a batch frame adds: its head and end, and a
// separator per frame.
const (
	batchOverhead      = 64
	batchFrameOverhead = 2
)

// batchRun returns how many of the first events one batch frame carries,
// and its size: events with consecutive seqs (the log has no gaps; this
// keeps a batch honest), within limit bytes, at least one.
func batchRun(group []eventlog.Event, limit int) (n, size int) {
	size = batchOverhead
	for i, ev := range group {
		next := size + len(ev.Payload) + batchFrameOverhead
		if i > 0 && (ev.Seq != group[0].Seq+uint64(i) || next > limit) {
			return i, size
		}
		size = next
	}
	return len(group), size
}

// sized returns buf emptied, with room for need bytes: one allocation
// instead of a growing buffer's several.
func sized(buf []byte, need int) []byte {
	if cap(buf) < need {
		return make([]byte, 0, need)
	}
	return buf[:0]
}

// trimmed drops a large buffer once it held something small again (the
// writer or pump caught up), so an idle session does not keep it, while
// a burst reuses it.
func trimmed(buf []byte) []byte {
	if cap(buf) > keepBuf && len(buf) < keepBuf/4 {
		return nil
	}
	return buf[:0]
}
