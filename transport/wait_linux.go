package transport

import (
	"errors"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// waitExited blocks until the child pid has exited, without reaping it.
// It waits for the child's pidfd in the runtime's poller, so no OS thread
// is held while the child runs; where pidfds cannot be polled (Linux
// before 5.10) it blocks a thread in waitid instead.
func waitExited(pid int) error {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return waitExitedBlocking(pid)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	raw, err := f.SyscallConn()
	if err != nil {
		return waitExitedBlocking(pid)
	}
	var waitErr error
	err = raw.Read(func(fd uintptr) bool {
		exited, err := pidfdExited(int(fd))
		waitErr = err
		return exited || err != nil
	})
	if err != nil {
		// The pidfd is not pollable here: the thread has to wait.
		return waitExitedBlocking(pid)
	}
	return waitErr
}

// pidfdExited reports, without waiting or reaping, whether the process
// behind a non-blocking pidfd has exited.
func pidfdExited(fd int) (bool, error) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return false, nil
		case err != nil:
			return false, os.NewSyscallError("waitid", err)
		}
		// With WNOHANG and nothing to report, the kernel leaves info zeroed.
		return info.Signo != 0, nil
	}
}

// waitExitedBlocking is waitExited on the calling thread.
func waitExitedBlocking(pid int) error {
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
