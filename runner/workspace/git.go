package workspace

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
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
	err := cmd.Run()
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
