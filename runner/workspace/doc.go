// Package workspace owns the per-workspace directories under a root: it
// validates workspace ids, creates each workspace on first use, lets one
// holder at a time use it (across goroutines and processes), and snapshots
// it into git before and after every session. It also owns each
// workspace's private home (the agent's own state, such as the CLI's
// session files that --resume needs), under a separate root.
//
// Layout:
//
//	<root>/<id>/                  the workspace the agent works in
//	<root>/.tether/git/<id>.git/  its git repository (kept outside the work tree)
//	<root>/.tether/locks/<id>     the lock its holder keeps
//	<homes>/<id>/                 the agent's private home
//
// The repository lives outside the work tree on purpose: the agent can
// write anything in its workspace, and a .git directory there would let it
// plant hooks, filters or config that the runner's own git (outside any
// sandbox) would then run. Ids never start with '.', so nothing under
// <root>/.tether can be a workspace.
package workspace
