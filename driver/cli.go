package driver

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"

	"github.com/tetherhq/tether/driver/internal/agentproc"
)

var (
	// ErrCLINotFound matches a *CLINotFoundError.
	ErrCLINotFound = errors.New("driver: agent CLI not found")
	// ErrUntestedVersion matches a *VersionError.
	ErrUntestedVersion = errors.New("driver: untested agent CLI version")
)

// CLINotFoundError is an agent's CLI that is not there.
type CLINotFoundError struct {
	Kind string
	// CLI is the path or name looked for.
	CLI string
	Err error
}

func (e *CLINotFoundError) Error() string {
	return fmt.Sprintf("%s: CLI not found: %v", e.Kind, e.Err)
}

// Is makes errors.Is(err, ErrCLINotFound) true.
func (e *CLINotFoundError) Is(target error) bool { return target == ErrCLINotFound }

func (e *CLINotFoundError) Unwrap() error { return e.Err }

// VersionError is a CLI whose version is not the one its driver is tested
// with (Config.AllowUntestedVersion runs it anyway).
type VersionError struct {
	Kind   string
	Found  string
	Tested string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s: the CLI is version %q, tested with %q", e.Kind, e.Found, e.Tested)
}

// Is makes errors.Is(err, ErrUntestedVersion) true.
func (e *VersionError) Is(target error) bool { return target == ErrUntestedVersion }

// CheckVersion holds found, the version kind's CLI reports, to tested:
// another version is a *VersionError, or with AllowUntestedVersion a
// warning in the log.
func (c Config) CheckVersion(kind, found, tested string) error {
	if found == tested {
		return nil
	}
	if !c.AllowUntestedVersion {
		return &VersionError{Kind: kind, Found: found, Tested: tested}
	}
	log := cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	log.Warn(kind+": untested CLI version", "found", found, "tested", tested)
	return nil
}

// LookPath finds name, kind's CLI, as exec.LookPath does but a bare name
// on the PATH of env when env sets one (the CLI runs with env, not with
// this process's environment). The path is absolute; a CLI that is not
// there is a *CLINotFoundError.
func LookPath(kind, name string, env []string) (string, error) {
	p, err := agentproc.FindCLI(name, env)
	if err != nil {
		return "", &CLINotFoundError{Kind: kind, CLI: name, Err: err}
	}
	return p, nil
}

// Find finds the kind's CLI: path when given, else its own search
// (Kind.FindCLI), by default its CLI's name on env's PATH. A built-in
// kind has none: "".
func (k Kind) Find(path string, env []string) (string, error) {
	switch {
	case k.Builtin():
		return "", nil
	case k.FindCLI != nil:
		return k.FindCLI(path, env)
	}
	return LookPath(k.Name, cmp.Or(path, k.CLI), env)
}
