package mockclaude

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// errStopped is returned by writes attempted after Run has returned.
var errStopped = errors.New("mockclaude: stopped")

// lineWriter serialises NDJSON lines to stdout. Every line is written while
// holding mu, so a control_response can never land inside another line.
type lineWriter struct {
	mu      sync.Mutex
	w       io.Writer
	buf     bytes.Buffer
	enc     *json.Encoder
	err     error // first write error; later writes fail with it
	stopped atomic.Bool
}

func newLineWriter(w io.Writer) *lineWriter {
	lw := &lineWriter{w: w}
	lw.enc = json.NewEncoder(&lw.buf)
	lw.enc.SetEscapeHTML(false) // like JSON.stringify: keep <, > and & as they are
	return lw
}

// send writes v as one JSON line.
func (lw *lineWriter) send(v any) error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if err := lw.ready(); err != nil {
		return err
	}
	lw.buf.Reset()
	if err := lw.enc.Encode(v); err != nil { // Encode appends '\n'
		return fmt.Errorf("mockclaude: encode %T: %w", v, err)
	}
	return lw.write(lw.buf.Bytes())
}

// raw writes b exactly as given (junk lines, half lines).
func (lw *lineWriter) raw(b []byte) error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if err := lw.ready(); err != nil {
		return err
	}
	return lw.write(b)
}

// stream lets fn write one line in pieces while no other line can start.
func (lw *lineWriter) stream(fn func(w io.Writer) error) error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if err := lw.ready(); err != nil {
		return err
	}
	return fn(writerFunc(lw.write))
}

func (lw *lineWriter) ready() error {
	if lw.err != nil {
		return lw.err
	}
	if lw.stopped.Load() {
		return errStopped
	}
	return nil
}

func (lw *lineWriter) write(b []byte) error {
	if _, err := lw.w.Write(b); err != nil {
		lw.err = err
		return err
	}
	return nil
}

type writerFunc func([]byte) error

func (f writerFunc) Write(b []byte) (int, error) {
	if err := f(b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// noteWriter writes human-readable diagnostics to stderr, one line each.
type noteWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (n *noteWriter) notef(format string, args ...any) {
	if n.w == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.w, "mock: "+format+"\n", args...)
}

// idGen makes deterministic ids from a seed, so a fixed clock and argv give
// byte-identical output.
type idGen struct {
	mu   sync.Mutex
	seed [32]byte
	n    uint64
}

func (g *idGen) next() [16]byte {
	g.mu.Lock()
	g.n++
	n := g.n
	g.mu.Unlock()
	var b [40]byte
	copy(b[:], g.seed[:])
	binary.BigEndian.PutUint64(b[32:], n)
	sum := sha256.Sum256(b[:])
	var out [16]byte
	copy(out[:], sum[:16])
	return out
}

// uuid returns a version-4-shaped UUID.
func (g *idGen) uuid() string {
	b := g.next()
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// token returns prefix plus 24 hex digits ("msg_mock_…", "toolu_mock_…").
func (g *idGen) token(prefix string) string {
	b := g.next()
	return prefix + hex.EncodeToString(b[:12])
}

// encodeLine appends v as one JSON line to buf, escaping like lineWriter.
func encodeLine(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// marshal encodes v like the CLI (no HTML escaping), without a newline.
func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := encodeLine(&buf, v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}
