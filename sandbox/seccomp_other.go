//go:build !(linux && (amd64 || arm64))

package sandbox

import (
	"errors"
	"runtime"
)

// seccompProgram has no filter to give on this system: the sandbox needs
// Linux on x86-64 or arm64.
func seccompProgram(Filter) ([]byte, error) {
	return nil, &UnavailableError{Probe: "seccomp filter", Err: errors.New("no filter for " + runtime.GOOS + "/" + runtime.GOARCH)}
}
