package acp

import (
	"context"
	"fmt"
	"path/filepath"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/runner/sessions"
)

// An editor's session works in its cwd, a workspace of the directory that
// holds it: its root. Each root has a core, opened with its first
// session (a runner's core serves every root); the front end remembers
// which root each session it has seen is in, so that a method that names
// only the session finds it, and its workspace is named as the editor
// named it.

// coreFor opens (once) the core of cwd's root and names cwd's workspace.
func (f *front) coreFor(ctx context.Context, cwd string) (Core, string, error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return nil, "", acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q is not an absolute path", cwd)})
	}
	cwd = filepath.Clean(cwd)
	root, id := filepath.Dir(cwd), filepath.Base(cwd)
	f.mu.Lock()
	defer f.mu.Unlock()
	if core, ok := f.cores[root]; ok {
		return core, id, nil
	}
	core, err := f.cfg.Open(ctx, root)
	if err != nil {
		return nil, "", acpsdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	f.cores[root] = core
	f.roots = append(f.roots, root)
	return core, id, nil
}

// note remembers that session id is in root.
func (f *front) note(id, cwd string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rootOf[id] = filepath.Dir(filepath.Clean(cwd))
}

// lookup finds session id, of this front end's agent, in the cores
// opened so far.
func (f *front) lookup(id string) (Core, sessions.Info, bool) {
	f.mu.Lock()
	order := make([]string, 0, len(f.roots))
	if root, ok := f.rootOf[id]; ok {
		order = append(order, root)
	}
	order = append(order, f.roots...)
	cores := make([]Core, len(order))
	for i, r := range order {
		cores[i] = f.cores[r]
	}
	f.mu.Unlock()
	for i, core := range cores {
		if core == nil {
			continue
		}
		if info, err := core.Get(id); err == nil && info.Agent == f.cfg.Agent {
			f.note(id, filepath.Join(order[i], info.WorkspaceID))
			return core, info, true
		}
	}
	return nil, sessions.Info{}, false
}

// cwdOf is a session's workspace as the editor named it.
func (f *front) cwdOf(info sessions.Info) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	root, ok := f.rootOf[info.ID]
	if !ok && len(f.roots) > 0 {
		root = f.roots[0]
	}
	return filepath.Join(root, info.WorkspaceID)
}

// opened are the roots opened so far and their cores, in the order they
// were opened.
func (f *front) opened() ([]string, []Core) {
	f.mu.Lock()
	defer f.mu.Unlock()
	roots := append([]string(nil), f.roots...)
	cores := make([]Core, len(roots))
	for i, r := range roots {
		cores[i] = f.cores[r]
	}
	return roots, cores
}
