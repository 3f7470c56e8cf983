package sandbox

// Filter is which seccomp filter a sandboxed process runs under.
type Filter int

const (
	// FilterAgent refuses what no coding agent needs: loading kernel
	// modules, kexec, reboot, bpf, perf events, the kernel keyring,
	// ptrace and reading other processes' memory, userfaultfd, file
	// handles, swap, clocks, quotas, the kernel log, io_uring, and the
	// 32-bit system call tables. It leaves namespaces and mounts, which a
	// nested sandbox needs.
	FilterAgent Filter = iota
	// FilterStrict refuses all of FilterAgent and also mount and its
	// relatives, pivot_root, chroot, setns, and creating namespaces (clone
	// and unshare with namespace flags; clone3, whose flags a filter
	// cannot read, as not implemented so that libc falls back to clone).
	FilterStrict
)
