//go:build linux && (amd64 || arm64)

package sandbox

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// The seccomp filters are written here rather than with a library: the one
// maintained Go assembler of such filters sends a system call of another
// architecture (i386 calls on x86-64) to the policy's default action, which
// for a deny-list like ours is "allow". These programs are short and are
// tested by making each refused call inside a real sandbox.

// seccompData offsets (struct seccomp_data).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits of args[0] on a little-endian machine
)

// x32SyscallBit marks a call of the x32 ABI on x86-64.
const x32SyscallBit = 0x40000000

// namespaceFlags are the CLONE_NEW* flags; CLONE_NEWTIME (0x80) only means
// that for unshare (in clone's flags those bits are the exit signal).
const (
	cloneNamespaceFlags   = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	unshareNamespaceFlags = cloneNamespaceFlags | unix.CLONE_NEWTIME
)

// program assembles a classic BPF program with three exits: allow,
// refuse with EPERM, refuse with ENOSYS.
type program struct {
	insns []unix.SockFilter
	// jumps are instructions whose jt goes to an exit, patched by bytes.
	jumps []jump
}

type exit int

const (
	exitAllow exit = iota
	exitEPERM
	exitENOSYS
)

type jump struct {
	at int
	to exit
}

func (p *program) add(code uint16, k uint32) {
	p.insns = append(p.insns, unix.SockFilter{Code: code, K: k})
}

// load loads the 32-bit word at off of seccomp_data.
func (p *program) load(off uint32) { p.add(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }

// jumpIf goes to exit to when the accumulator compares true with k
// (op: BPF_JEQ, BPF_JGE or BPF_JSET), else on.
func (p *program) jumpIf(op uint16, k uint32, to exit) {
	p.jumps = append(p.jumps, jump{len(p.insns), to})
	p.add(unix.BPF_JMP|op|unix.BPF_K, k)
}

// refuse sends system call nr to exit to.
func (p *program) refuse(nr int, to exit) { p.jumpIf(unix.BPF_JEQ, uint32(nr), to) }

// refuseFlags sends system call nr to EPERM when its first argument has
// any of flags, and reloads the call number.
func (p *program) refuseFlags(nr int, flags uint32) {
	p.add(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, uint32(nr))
	p.insns[len(p.insns)-1].Jf = 3 // not nr: skip the argument check
	p.load(offArg0)
	p.jumpIf(unix.BPF_JSET, flags, exitEPERM)
	p.load(offNr)
}

// bytes ends the program with its exits and encodes it as the kernel's
// struct sock_filter array, which bwrap --seccomp reads.
func (p *program) bytes() ([]byte, error) {
	exits := len(p.insns)
	p.add(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW)
	p.add(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM))
	p.add(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS))
	for _, j := range p.jumps {
		off := exits + int(j.to) - (j.at + 1)
		if off > 255 {
			return nil, fmt.Errorf("sandbox: seccomp program too long (%d instructions)", len(p.insns))
		}
		p.insns[j.at].Jt = uint8(off)
	}
	out := make([]byte, 0, 8*len(p.insns))
	for _, in := range p.insns {
		out = binary.NativeEndian.AppendUint16(out, in.Code)
		out = append(out, in.Jt, in.Jf)
		out = binary.NativeEndian.AppendUint32(out, in.K)
	}
	return out, nil
}

// seccompProgram is filter f for this machine's architecture.
func seccompProgram(f Filter) ([]byte, error) {
	a := thisArch() // the build tags leave only the architectures it knows
	var p program
	p.load(offArch)
	// Another architecture's calls (i386 ones on x86-64) have other
	// numbers: refuse them all.
	p.add(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, a.audit)
	p.insns[len(p.insns)-1].Jt = 1
	p.add(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS))
	p.load(offNr)
	if a.x32 {
		p.jumpIf(unix.BPF_JGE, x32SyscallBit, exitENOSYS)
	}
	for _, nr := range a.agentDeny {
		p.refuse(nr, exitEPERM)
	}
	for _, nr := range a.noSys {
		p.refuse(nr, exitENOSYS)
	}
	if f == FilterStrict {
		for _, nr := range a.strictDeny {
			p.refuse(nr, exitEPERM)
		}
		p.refuse(unix.SYS_CLONE3, exitENOSYS)
		p.refuseFlags(unix.SYS_CLONE, cloneNamespaceFlags)
		p.refuseFlags(unix.SYS_UNSHARE, unshareNamespaceFlags)
	}
	return p.bytes()
}

// arch is one architecture's audit number and system call lists.
type arch struct {
	audit uint32
	x32   bool // the x32 ABI shares the audit number: refuse its calls
	// agentDeny are refused with EPERM by every filter, noSys with
	// ENOSYS (so that callers fall back), strictDeny by FilterStrict.
	agentDeny, noSys, strictDeny []int
}

// commonDeny are the calls FilterAgent refuses on every architecture.
var commonDeny = []int{
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_KEXEC_LOAD, unix.SYS_REBOOT,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_USERFAULTFD, unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
	unix.SYS_QUOTACTL, unix.SYS_SYSLOG, unix.SYS_FANOTIFY_INIT, unix.SYS_VHANGUP,
	unix.SYS_LOOKUP_DCOOKIE,
}

// commonNoSys are refused with ENOSYS: io_uring, whose users fall back to
// ordinary calls, and a source of many kernel escapes.
var commonNoSys = []int{unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER}

// commonStrict are the mount calls FilterStrict refuses besides.
var commonStrict = []int{
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT, unix.SYS_SETNS,
	unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT,
	unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
}
