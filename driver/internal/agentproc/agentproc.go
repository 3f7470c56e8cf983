// Package agentproc owns what the drivers of agents that run as a local
// process share: reading the CLI's version, the process's environment,
// the files of the agent's private home and the runner's configuration
// they come from, and the part of the CLI's installation a sandbox must
// let it see.
package agentproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tetherhq/tether/sandbox"
	"github.com/tetherhq/tether/transport"
)

// ErrHomeFile: a home file's path leaves the home.
var ErrHomeFile = errors.New("agentproc: a home file must be a path inside the home")

// Version runs `cli --version` with env, within timeout, and returns what
// it printed, trimmed.
func Version(cli string, env []string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "--version")
	cmd.Env = env
	cmd.WaitDelay = time.Second // a child that keeps stdout open
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", cli, err)
	}
	v := strings.TrimSpace(string(out))
	if v == "" {
		return "", fmt.Errorf("%s --version printed nothing", cli)
	}
	return v, nil
}

// FindCLI finds the executable name as exec.LookPath does, but a bare
// name on the PATH of env when env sets one (the CLI runs with env, not
// with this process's environment); the path it returns is absolute.
func FindCLI(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", err
		}
		return filepath.Abs(p)
	}
	if path, ok := LookupEnv(env, "PATH"); ok {
		for _, dir := range filepath.SplitList(path) {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return filepath.Abs(p)
			}
		}
		return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// Sandbox makes cmd run its program under a copy of policy for one
// session: its workspace and home bound read-write, cmd's environment as
// its whole environment, the network on (the agent reaches its model API
// and, for a server, its own port), and the CLI's installation readable.
func Sandbox(cmd *transport.Command, policy sandbox.Policy, workspace, home string) error {
	policy.Workspace, policy.Home, policy.Network = workspace, home, true
	policy.Env = EnvMap(cmd.Env)
	policy.ReadOnly = append(slices.Clip(policy.ReadOnly), CLIDirs(cmd.Path, cmd.Env)...)
	sc, err := policy.Wrap(cmd.Path, cmd.Args)
	if err != nil {
		return err
	}
	Run(cmd, sc)
	return nil
}

// Run makes cmd run sc, a sandboxed command: bwrap as its program, with
// sc's arguments and environment, and the files bwrap reads as its extra
// descriptors (Connect closes them).
func Run(cmd *transport.Command, sc *sandbox.Command) {
	cmd.Path, cmd.Args, cmd.Env, cmd.ExtraFiles = sc.Path, sc.Args, sc.Env, sc.Files
}

// WriteHomeFiles writes files under home at their relative paths (mode
// 0600, parents 0700), replacing what was there; a path that would leave
// home is refused with ErrHomeFile.
func WriteHomeFiles(home string, files map[string][]byte) error {
	for rel, data := range files {
		clean := filepath.Clean(rel)
		if filepath.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%w: %q", ErrHomeFile, rel)
		}
		p := filepath.Join(home, clean)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return fmt.Errorf("home file %s: %w", rel, err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return fmt.Errorf("home file %s: %w", rel, err)
		}
		if err := os.Chmod(p, 0o600); err != nil { // WriteFile keeps an existing file's mode
			return fmt.Errorf("home file %s: %w", rel, err)
		}
	}
	return nil
}

// EnvMap is env (NAME=value entries) as a map; a later entry wins.
func EnvMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// SetEnv sets key in env, replacing every earlier value.
func SetEnv(env []string, key, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// LookupEnv is key's value in env (the last entry wins, as for a process).
func LookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// CLIDirs are the directories a CLI needs to see inside a sandbox: the
// whole npm tree its launcher link and the package behind it come from
// (node_modules), or its own directory; and, for a script, its
// interpreter's installation when that lies outside the system
// directories the sandbox shows anyway (a node under /opt or in a version
// manager's tree), found on env's PATH as `#!/usr/bin/env node` finds it.
func CLIDirs(cli string, env []string) []string {
	var dirs []string
	paths := []string{cli}
	if real, err := filepath.EvalSymlinks(cli); err == nil && real != cli {
		paths = append(paths, real)
	}
	for _, p := range paths {
		dir := filepath.Dir(p)
		for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
			if filepath.Base(d) == "node_modules" {
				dir = d
				break
			}
		}
		if !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	if dir := interpreterDir(paths[len(paths)-1], env); dir != "" && !slices.Contains(dirs, dir) {
		dirs = append(dirs, dir)
	}
	return dirs
}

// interpreterDir is the installation of script's interpreter (the
// directory above its bin/), or "" when script is no script or its
// interpreter is a system one.
func interpreterDir(script string, env []string) string {
	f, err := os.Open(script)
	if err != nil {
		return ""
	}
	head := make([]byte, 256)
	n, _ := f.Read(head)
	_ = f.Close()
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if !strings.HasPrefix(line, "#!") || len(fields) == 0 {
		return ""
	}
	interp := fields[0]
	if filepath.Base(interp) == "env" {
		name := ""
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") {
				name = f
				break
			}
		}
		if name == "" {
			return ""
		}
		if interp, err = FindCLI(name, env); err != nil {
			return ""
		}
	}
	real, err := filepath.EvalSymlinks(interp)
	if err != nil {
		return ""
	}
	if sandbox.InSystemDirs(real) {
		return ""
	}
	dir := filepath.Dir(real)
	if filepath.Base(dir) == "bin" {
		dir = filepath.Dir(dir)
	}
	if dir == "/" {
		return ""
	}
	return dir
}
