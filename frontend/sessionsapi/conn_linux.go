package sessionsapi

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendProgress reads a TCP connection's count of bytes its peer has
// acknowledged and of bytes still queued to it (sent and unacknowledged,
// or not sent yet); ok is false where the connection cannot tell.
func sendProgress(c net.Conn) (acked uint64, queued int, ok bool) {
	sc, isSys := c.(syscall.Conn)
	if !isSys {
		return 0, 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var infoErr, queueErr error
	err = raw.Control(func(fd uintptr) {
		var info *unix.TCPInfo
		if info, infoErr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); infoErr == nil {
			acked = info.Bytes_acked
		}
		queued, queueErr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
	})
	return acked, queued, err == nil && infoErr == nil && queueErr == nil
}
