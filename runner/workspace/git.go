package workspace

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// git runs git commands for one repository with an environment of its own:
// nothing inherited but PATH (no GIT_* variables, no system or global
// config), and each command bounded by a timeout as well as its ctx.
type git struct {
	path    string // the git executable
	home    string // HOME for git: a private, empty-of-config directory
	timeout time.Duration
}

// env is the whole environment of every git command.
func (g *git) env() []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	return []string{
		"PATH=" + path,
		"HOME=" + g.home,
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
	}
}

// gitNice is how much nicer than the runner git commands are: snapshots
// are bookkeeping done while an agent starts and works, and on a busy
// machine the agent's start and its output should get the CPU first.
const gitNice = 10

// lowerPriority makes process pid gitNice nicer than this one (19 at
// most). It is done once the process runs, which its start is too short
// to matter for; a failure leaves it as it was.
func lowerPriority(pid int) {
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, os.Getpid()) // the process: this thread may be niced already
	if err != nil {
		return
	}
	if runtime.GOOS == "linux" {
		p = 20 - p // the system call's own encoding of the niceness
	}
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, pid, min(p+gitNice, 19))
}

// run runs git with args and returns its stdout.
func (g *git) run(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.path, args...)
	cmd.Env = g.env()
	cmd.Dir = g.home
	cmd.Stdin = nil
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	err := cmd.Start()
	if err == nil {
		lowerPriority(cmd.Process.Pid)
		err = cmd.Wait()
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[:2000] + "…"
		}
		return stdout.Bytes(), &GitError{Args: args, Stderr: msg, Err: err}
	}
	return stdout.Bytes(), nil
}
