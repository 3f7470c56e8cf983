package acp

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/tetherhq/tether/protocol/ndjson"
	"github.com/tetherhq/tether/transport"
)

// lineStream is a transport.Conn as the byte streams the ACP connection
// reads and writes: every line read gets its newline back, and written
// bytes leave a line at a time.
type lineStream struct {
	ctx  context.Context
	conn transport.Conn
	log  *slog.Logger

	rbuf []byte

	wmu  sync.Mutex
	wbuf []byte
}

// Read hands over the next line; a line the transport skipped (too long,
// cut off) is logged and passed over.
func (l *lineStream) Read(p []byte) (int, error) {
	for len(l.rbuf) == 0 {
		line, err := l.conn.Read(l.ctx)
		if errors.Is(err, ndjson.ErrSkipped) {
			l.log.Warn("acp: an unreadable line was skipped", "err", err)
			continue
		}
		if err != nil {
			return 0, err
		}
		l.rbuf = append(line, '\n')
	}
	n := copy(p, l.rbuf)
	l.rbuf = l.rbuf[n:]
	return n, nil
}

// Write sends every whole line in p; a partial line waits for its end.
func (l *lineStream) Write(p []byte) (int, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.wbuf = append(l.wbuf, p...)
	for {
		i := bytes.IndexByte(l.wbuf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := bytes.Clone(l.wbuf[:i])
		l.wbuf = l.wbuf[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := l.conn.Write(l.ctx, line); err != nil {
			return 0, err
		}
	}
}
