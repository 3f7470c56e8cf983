package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// systemDirs are the directories of the host's toolchain the agent sees,
// read-only: programs, libraries and their data. On a merged-/usr system
// the top-level ones are symlinks into /usr and stay symlinks inside.
var systemDirs = [...]string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcEntries are the only parts of the host's /etc the agent sees: name
// resolution, TLS roots, the dynamic loader's cache, time zone, the
// alternatives links /usr/bin points into, and a few files that common
// tools read. Never shadow, sudoers, ssh keys, package-manager credentials
// (npmrc, pip.conf) or anything of the runner's own configuration.
var etcEntries = [...]string{
	"hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf", "protocols", "services",
	"ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf", "pki/tls/certs", "pki/ca-trust",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "alternatives",
	"os-release", "debian_version", "mime.types", "magic", "magic.mime", "inputrc", "bash.bashrc",
	"locale.alias", "terminfo",
}

// InternalDir is where the sandbox keeps files of its own inside, such as
// the seccomp filter a nested sandbox loads (see BashCommand).
const InternalDir = "/run/tether"

// toolFilterPath is the strict seccomp filter for commands run in nested
// sandboxes, inside the agent's sandbox.
const toolFilterPath = InternalDir + "/tools.seccomp"

// userName is the agent's user name inside.
const userName = "agent"

// systemView is the part of bwrap's command line that builds the agent's
// view of the system, before its own directories: read-only toolchain
// directories, a filtered /etc with a passwd and group naming only the
// sandbox's users, its own /dev, /proc and /tmp. data receives the
// contents bound with --ro-bind-data; each is read from descriptor
// firstFD+i.
func systemView(uid, gid int, home string, firstFD int) (args []string, data [][]byte) {
	for _, dir := range systemDirs {
		fi, err := os.Lstat(dir)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(dir); err == nil {
				args = append(args, "--symlink", target, dir)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", dir, dir)
		}
	}
	args = append(args, "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--dir", "/etc")
	for _, name := range etcEntries {
		args = append(args, etcEntry(filepath.Join("/etc", name))...)
	}
	users := fmt.Sprintf("root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n%s:x:%d:%d:agent:%s:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		userName, uid, gid, home)
	groups := fmt.Sprintf("root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", userName, gid)
	data = [][]byte{[]byte(users), []byte(groups)}
	args = append(args,
		"--perms", "0644", "--ro-bind-data", strconv.Itoa(firstFD), "/etc/passwd",
		"--perms", "0644", "--ro-bind-data", strconv.Itoa(firstFD+1), "/etc/group")
	return args, data
}

// etcEntry binds one host /etc entry, if it exists, at the same place: a
// symlink that stays within the system directories is kept as a symlink
// (os-release, localtime), any other is bound from where it leads
// (a resolv.conf managed under /run).
func etcEntry(path string) []string {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		if err != nil {
			return nil
		}
		abs := target
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(filepath.Dir(path), target)
		}
		if InSystemDirs(filepath.Clean(abs)) {
			return []string{"--symlink", target, path}
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil // dangling on the host too
		}
		return []string{"--ro-bind", real, path}
	}
	return []string{"--ro-bind", path, path}
}

// InSystemDirs reports whether path (absolute, clean) is inside the
// toolchain directories every sandbox shows: a program there needs no
// Policy.ReadOnly of its own.
func InSystemDirs(path string) bool {
	for _, dir := range systemDirs {
		if within(path, dir) {
			return true
		}
	}
	return false
}

// visibleInSystem reports whether path (absolute, clean) is seen inside
// through the system view: the toolchain directories, or the /etc entries.
func visibleInSystem(path string) bool {
	if InSystemDirs(path) {
		return true
	}
	for _, name := range etcEntries {
		if within(path, filepath.Join("/etc", name)) {
			return true
		}
	}
	return strings.HasPrefix(path, "/dev/") || strings.HasPrefix(path, "/proc/")
}
