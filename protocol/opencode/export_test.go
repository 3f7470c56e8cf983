package opencode

import "io"

// NewPayload is the zero payload DecodeEvent fills for an event type.
func NewPayload(typ string) Payload { return newPayload(typ) }

// NewSSEReaderSpillingAt is NewSSEReader with data lines spilled from the
// given length on, so that short test inputs reach the spill path.
func NewSSEReaderSpillingAt(src io.Reader, maxEventSize, spillAt int) *SSEReader {
	r := NewSSEReader(src, maxEventSize)
	r.spillAt = max(spillAt, 1)
	return r
}
