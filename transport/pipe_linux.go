package transport

import (
	"os"
	"syscall"
)

// pipeSize is the capacity a busy stdout pipe grows to: 1 MiB instead of
// the default 64 KiB lets the agent write its output in large chunks, so
// both sides wake up far less often.
const pipeSize = 1 << 20

// fSetPipeSz is F_SETPIPE_SZ (fcntl.h), absent from package syscall.
const fSetPipeSz = 1031

// growPipe enlarges a pipe; failing (a lower system limit) changes nothing
// but speed.
func growPipe(f *os.File) {
	raw, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSz, pipeSize)
	})
}
