// Package sandbox owns running an agent process under bubblewrap (bwrap):
// the policy of what the agent may see and touch, the bwrap command line
// that enforces it, and the rewrite of the agent's Bash commands into a
// nested sandbox without network.
//
// Inside, the whole system is read-only; the agent can write only its
// workspace, its private home and a private /tmp. Hidden directories (the
// workspaces root, the runner's data) are covered by empty tmpfs mounts
// before the agent's own directories are bound back in, so other workspaces
// do not exist inside. The agent gets exactly the environment the policy
// gives, runs as a non-root user of a user namespace with no capabilities,
// in its own pid, ipc and uts namespaces (and network namespace unless the
// policy grants network), and dies with its parent.
package sandbox
