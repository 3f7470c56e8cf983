package transport

import (
	"os"
	"syscall"
	"unsafe"
)

// waitExited blocks until the child pid has exited, without reaping it.
func waitExited(pid int) error {
	const pPID = 1 // P_PID
	// siginfo_t is 128 bytes; only the wait's completion matters here.
	var info [128]byte
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return os.NewSyscallError("waitid", errno)
		}
	}
}
