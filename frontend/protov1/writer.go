package protov1

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/agent"
	v1 "github.com/tetherhq/tether/protocol/runnerv1"
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

// writeEvents sends the session's frames after `after`, then live ones,
// until the session has ended (errSessionOver) or ctx ends.
func (c *conn) writeEvents(ctx context.Context, id string, after uint64) error {
	p := newProjector(c.relay, func(turnID string, before uint64) string { return c.findRequest(ctx, id, turnID, before) })
	// The host paces its session, as a local SDK's reader paces the CLI:
	// a host that reads slowly holds the agent back rather than leaving
	// the log to run ahead of it.
	pacer, err := c.srv.Sessions.Pace(id, after)
	if err != nil {
		return err
	}
	defer pacer.Close()
	var frames []frame
	var scratch []byte
	for group, err := range c.srv.Sessions.EventGroups(ctx, id, after, groupFrames) {
		if err != nil {
			code := v1.CodeInternal
			if errors.Is(err, eventlog.ErrAhead) {
				code = v1.CodeLastSeqAhead
			}
			c.sendError(ctx, "", code, err.Error())
			return err
		}
		frames, scratch = c.project(p, group, frames[:0], scratch[:0])
		if len(frames) > 0 {
			if err := c.writeGroup(ctx, frames); err != nil {
				return err
			}
		}
		pacer.Sent(uint64(group[len(group)-1].Seq))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errSessionOver
}

// frame is one frame to send, without its seq.
type frame struct {
	seq  uint64
	data []byte
}

// project makes the group's frames, back to back in scratch.
func (c *conn) project(p *projector, group []agent.Event, frames []frame, scratch []byte) ([]frame, []byte) {
	for i := range group {
		start := len(scratch)
		var ok bool
		if scratch, ok = p.frame(scratch, &group[i]); ok {
			frames = append(frames, frame{seq: uint64(group[i].Seq), data: scratch[start:len(scratch):len(scratch)]})
		}
	}
	return frames, scratch
}

// writeGroup sends a group of frames in one write, within writeTimeout
// and ctx: past either the connection is closed, as a WebSocket write
// whose context ends closes it. The group's messages are written under
// one watch of ctx, not one each (a WebSocket write with a context that
// can end arms and disarms a watch of its own every time, which costs
// more than writing a seed client's frame).
func (c *conn) writeGroup(ctx context.Context, group []frame) error {
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
func full(group []frame) bool {
	if len(group) >= groupFrames {
		return true
	}
	size := 0
	for _, f := range group {
		size += len(f.data)
	}
	return size >= groupBytes/2
}

// writeMessages writes the group's messages, all but the last gathered.
func (c *conn) writeMessages(ctx context.Context, group []frame) error {
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
func (c *conn) encode(group []frame) int {
	n, size := 1, 0
	if c.batch {
		n, size = batchRun(group, c.batchBytes)
	}
	if n == 1 {
		c.buf = v1.WithSeq(c.buf[:0], group[0].data, group[0].seq)
		return 1
	}
	c.items = c.items[:0]
	for _, f := range group[:n] {
		c.items = append(c.items, f.data)
	}
	need := size
	if size > keepBuf/4 {
		// A large batch: room for the largest this connection sends now,
		// as batches grow and each larger one would allocate again.
		need = max(size, c.batchBytes)
	}
	c.buf = v1.AppendBatch(sized(c.buf, need), group[0].seq, c.items)
	clear(c.items)
	return n
}

// batchOverhead is about what a batch frame adds: its head and end, and a
// separator per frame.
const (
	batchOverhead      = 64
	batchFrameOverhead = 2
)

// batchRun returns how many of the first frames one batch frame carries,
// and its size: frames with consecutive seqs (a batch numbers its frames
// on from its seq; events that make no frame leave gaps), within limit
// bytes, at least one.
func batchRun(group []frame, limit int) (n, size int) {
	size = batchOverhead
	for i, f := range group {
		next := size + len(f.data) + batchFrameOverhead
		if i > 0 && (f.seq != group[0].seq+uint64(i) || next > limit) {
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
