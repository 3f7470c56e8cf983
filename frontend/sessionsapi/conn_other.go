//go:build !linux

package sessionsapi

import "net"

// sendProgress cannot read a socket's queue here: a stalled SSE reader is
// dropped once a write blocks for the window instead.
func sendProgress(net.Conn) (acked uint64, queued int, ok bool) { return 0, 0, false }
