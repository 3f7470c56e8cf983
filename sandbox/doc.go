// Package sandbox owns running an agent process under bubblewrap (bwrap):
// the policy of what the agent may see and touch, the bwrap command line
// that enforces it, the seccomp filters it loads, and the nested sandbox
// without network the agent's commands run in: its Bash commands rewritten
// (BashCommand), or every command of an agent that runs them itself
// through the shell the sandbox gives it (Policy.ToolShell).
//
// The agent starts from an empty root and sees only what it needs: the
// host's toolchain directories (/usr and the /bin, /lib… beside it) and a
// few /etc entries (name resolution, TLS roots, the loader's cache)
// read-only, a passwd and group naming only the sandbox's users, its CLI's
// installation and the paths the policy adds read-only, its workspace and
// private home read-write, and a /tmp, /dev and /proc of its own. Nothing
// else of the host exists inside: not /root or /home, not the runner's data,
// token or TLS files, not other workspaces. Hidden directories are covered
// by empty tmpfs mounts too, so a broad read-only path cannot show them.
// The root is read-only; the agent can write only its workspace, its home
// and /tmp.
//
// The agent gets exactly the environment the policy gives, runs as a
// non-root user of a user namespace with no capabilities, in its own pid,
// ipc and uts namespaces (and network namespace unless the policy grants
// network), under a seccomp filter (see Filter), and dies with its parent.
// docs/security.md has the threat model.
package sandbox
