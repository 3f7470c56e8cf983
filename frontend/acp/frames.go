package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// maxFrame is the longest line the front end reads: the SDK's own bound.
const maxFrame = 10 << 20

// lockedWriter writes whole messages under one lock: the SDK's and the
// frame guard's answers share stdout, a line each.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// FrameError says why a line is not a JSON-RPC message; Code is its
// JSON-RPC error code.
type FrameError struct {
	Code   int
	Reason string
}

func (e *FrameError) Error() string { return fmt.Sprintf("acp: bad frame (%d): %s", e.Code, e.Reason) }

// JSON-RPC's codes for frames that are not requests.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// CheckFrame accepts a line that is one JSON-RPC 2.0 message object and
// otherwise returns a *FrameError with the code to answer it with. The
// SDK drops a line it cannot parse without a word; JSON-RPC wants an
// answer, with a null id.
func CheckFrame(line []byte) error {
	if !json.Valid(line) {
		return &FrameError{Code: codeParseError, Reason: "not JSON"}
	}
	var msg struct {
		JSONRPC *string         `json:"jsonrpc"`
		Method  json.RawMessage `json:"method"`
		ID      json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		return &FrameError{Code: codeInvalidRequest, Reason: "not a JSON-RPC message object"}
	}
	if msg.JSONRPC == nil || *msg.JSONRPC != "2.0" {
		return &FrameError{Code: codeInvalidRequest, Reason: `"jsonrpc" is not "2.0"`}
	}
	if len(msg.Method) > 0 {
		var method string
		if json.Unmarshal(msg.Method, &method) != nil {
			return &FrameError{Code: codeInvalidRequest, Reason: `"method" is not a string`}
		}
	}
	if len(msg.ID) > 0 {
		switch msg.ID[0] {
		case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		default:
			return &FrameError{Code: codeInvalidRequest, Reason: `"id" is not a string, number or null`}
		}
	}
	return nil
}

// guardFrames copies the lines of r that are JSON-RPC messages to w and
// answers the others itself, on out.
func guardFrames(r io.Reader, w *io.PipeWriter, out io.Writer, onBad func(error)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxFrame)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := CheckFrame(line); err != nil {
			onBad(err)
			var fe *FrameError
			errors.As(err, &fe)
			message := "Invalid Request"
			if fe.Code == codeParseError {
				message = "Parse error"
			}
			answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
				"error": map[string]any{"code": fe.Code, "message": message, "data": map[string]any{"error": fe.Reason}}})
			if _, werr := out.Write(append(answer, '\n')); werr != nil {
				break
			}
			continue
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			break
		}
	}
	w.CloseWithError(sc.Err())
}
