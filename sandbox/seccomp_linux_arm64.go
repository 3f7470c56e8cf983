package sandbox

import "golang.org/x/sys/unix"

func thisArch() arch {
	return arch{
		audit:      unix.AUDIT_ARCH_AARCH64,
		agentDeny:  append(append([]int{}, commonDeny...), unix.SYS_KEXEC_FILE_LOAD, unix.SYS_NFSSERVCTL),
		noSys:      commonNoSys,
		strictDeny: commonStrict,
	}
}
