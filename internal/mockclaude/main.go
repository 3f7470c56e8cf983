package mockclaude

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// shutdownGrace is how long Main waits for Run to wind down after a signal
// before returning anyway (Run may be blocked writing to a full stdout).
const shutdownGrace = 2 * time.Second

// Main runs the mock as the current process: Config from os.Args[1:] and
// the environment, os.Stdin/Stdout/Stderr, SIGTERM/SIGINT cancel the run.
// It returns the exit code (143 after SIGTERM, 130 after SIGINT) for the
// caller to pass to os.Exit. A test binary uses it from TestMain:
//
//	if os.Getenv(mockclaude.EnvMain) == "1" {
//		os.Exit(mockclaude.Main())
//	}
func Main() int {
	cfg := ConfigFromEnv(os.Args[1:], os.Getenv)
	if wd, err := os.Getwd(); err == nil {
		cfg.Cwd = wd
	}
	cfg.CloseStdout = os.Stdout.Close

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	done := make(chan int, 1)
	go func() { done <- Run(ctx, os.Stdin, os.Stdout, os.Stderr, cfg) }()
	select {
	case code := <-done:
		return code
	case sig := <-sigs:
		cancel()
		code := 143
		if sig == syscall.SIGINT {
			code = 130
		}
		timer := time.NewTimer(shutdownGrace)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
		}
		return code
	}
}
