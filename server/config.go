package server

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// ErrInvalidConfig matches a Config that Run refuses before it starts.
var ErrInvalidConfig = errors.New("server: invalid configuration")

// ConfigError is one field of a Config that cannot be used.
type ConfigError struct {
	Field  string // "AgentEnv", "DataDir"
	Reason string
}

func (e *ConfigError) Error() string { return "server: " + e.Field + ": " + e.Reason }

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// resolved is cfg with its defaults filled in and every path made
// absolute, once, at start: the sandbox takes only absolute paths, and a
// path must not change meaning if anything later runs in another
// directory. A bare CLI name ("claude") stays a name, looked up on PATH.
func (cfg Config) resolved() (Config, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.DataDir == "" {
		return cfg, &ConfigError{Field: "DataDir", Reason: "is required"}
	}
	if cfg.WorkspaceRoot == "" {
		cfg.WorkspaceRoot = filepath.Join(cfg.DataDir, "workspaces")
	}
	if cfg.HomesRoot == "" {
		cfg.HomesRoot = filepath.Join(cfg.DataDir, "homes")
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return cfg, &ConfigError{Field: "TLSCert", Reason: "a TLS certificate and key go together (--tls-cert, --tls-key)"}
	}
	if err := checkAgentEnv(cfg.AgentEnv); err != nil {
		return cfg, err
	}
	cfg.CLIs = maps.Clone(cfg.CLIs)
	if err := cfg.checkCLIs(); err != nil {
		return cfg, err
	}
	paths := []pathField{
		{"DataDir", &cfg.DataDir}, {"WorkspaceRoot", &cfg.WorkspaceRoot}, {"HomesRoot", &cfg.HomesRoot},
		{"TLSCert", &cfg.TLSCert}, {"TLSKey", &cfg.TLSKey},
		{"Auth.File", &cfg.Auth.File}, {"RecordDir", &cfg.RecordDir},
	}
	if strings.Contains(cfg.CLIPath, "/") {
		paths = append(paths, pathField{"CLIPath", &cfg.CLIPath})
	}
	for _, f := range paths {
		if err := f.makeAbs(); err != nil {
			return cfg, err
		}
	}
	cfg.SandboxReadOnly = slices.Clone(cfg.SandboxReadOnly)
	for i := range cfg.SandboxReadOnly {
		if err := (pathField{"SandboxReadOnly", &cfg.SandboxReadOnly[i]}).makeAbs(); err != nil {
			return cfg, err
		}
	}
	if err := cfg.checkSandboxReadOnly(); err != nil {
		return cfg, err
	}
	for kind, p := range cfg.CLIs {
		if strings.Contains(p, "/") {
			if err := (pathField{"CLIs." + kind, &p}).makeAbs(); err != nil {
				return cfg, err
			}
			cfg.CLIs[kind] = p
		}
	}
	return cfg, nil
}

// checkSandboxReadOnly refuses an extra read-only path of the sandbox that
// would show agents the runner's own secrets: its token file or TLS files
// (the data directory and workspaces stay hidden inside it anyway). Each
// path must exist; the sandbox's probe at start mounts them all.
// Paths are compared as the sandbox mounts them, symlinks followed: a
// read-only path that is a link to the secrets' directory, or a secret
// given through a link, is caught all the same.
func (cfg Config) checkSandboxReadOnly() error {
	for _, ro := range cfg.SandboxReadOnly {
		real, err := filepath.EvalSymlinks(ro)
		if err != nil {
			return &ConfigError{Field: "SandboxReadOnly", Reason: fmt.Sprintf("--sandbox-ro %s: %v", ro, err)}
		}
		for _, secret := range []pathField{{"token file", &cfg.Auth.File}, {"TLS key", &cfg.TLSKey}, {"TLS certificate", &cfg.TLSCert}} {
			if *secret.p == "" {
				continue
			}
			if within(realPath(*secret.p), real) || within(*secret.p, ro) {
				return &ConfigError{Field: "SandboxReadOnly", Reason: fmt.Sprintf(
					"--sandbox-ro %s would show agents the runner's %s (%s)", ro, secret.name, *secret.p)}
			}
		}
	}
	return nil
}

// realPath is path with its symlinks followed, as far as they exist.
func realPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		return filepath.Join(dir, filepath.Base(path))
	}
	return path
}

// pathField is a path of a Config, by name.
type pathField struct {
	name string
	p    *string
}

func (f pathField) makeAbs() error {
	if *f.p == "" {
		return nil
	}
	abs, err := filepath.Abs(*f.p)
	if err != nil {
		return &ConfigError{Field: f.name, Reason: err.Error()}
	}
	*f.p = abs
	return nil
}

// checkAgentEnv refuses entries that are not variable names: AgentEnv
// names variables of the runner's own environment, and an entry such as
// "FOO=bar" would otherwise be a name no variable has, silently.
func checkAgentEnv(names []string) error {
	for _, n := range names {
		if k, _, ok := strings.Cut(n, "="); ok {
			// The value may be a secret: the error shows the name alone.
			return &ConfigError{Field: "AgentEnv", Reason: fmt.Sprintf(
				"%q is not a name: --agent-env takes NAMES of the runner's own environment variables, not NAME=value (set %s in the runner's environment, then pass --agent-env %s)",
				k+"=…", k, k)}
		}
		if n == "" {
			return &ConfigError{Field: "AgentEnv", Reason: "an empty name"}
		}
	}
	return nil
}
