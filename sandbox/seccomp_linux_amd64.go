package sandbox

import "golang.org/x/sys/unix"

func thisArch() arch {
	return arch{
		audit: unix.AUDIT_ARCH_X86_64,
		x32:   true,
		agentDeny: append(append([]int{}, commonDeny...),
			unix.SYS_KEXEC_FILE_LOAD, unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_USELIB, unix.SYS_CREATE_MODULE,
			unix.SYS_GET_KERNEL_SYMS, unix.SYS_QUERY_MODULE, unix.SYS_NFSSERVCTL, unix.SYS__SYSCTL, unix.SYS_USTAT, unix.SYS_SYSFS),
		noSys:      commonNoSys,
		strictDeny: commonStrict,
	}
}
