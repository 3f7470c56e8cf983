package console

import (
	"os"

	"golang.org/x/term"
)

// WithStdio wires cfg to this process's terminal: stdout, stderr, and
// approval answers from the terminal when stdin is one. Answers are read
// from /dev/tty when it opens, because a read there can be abandoned
// when the CLI withdraws its question (os.Stdin's cannot). NO_COLOR turns
// styling off. Call the returned func when the run is over.
func WithStdio(cfg Config) (Config, func()) {
	cfg.Out, cfg.Err, cfg.In = os.Stdout, os.Stderr, os.Stdin
	cfg.InTerminal = isTerminal(os.Stdin)
	cfg.OutTerminal = isTerminal(os.Stdout)
	cfg.ErrTerminal = isTerminal(os.Stderr)
	_, noColor := os.LookupEnv("NO_COLOR")
	cfg.Color = cfg.OutTerminal && !noColor
	if !cfg.InTerminal {
		return cfg, func() {}
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return cfg, func() {}
	}
	cfg.In = tty
	return cfg, func() { _ = tty.Close() }
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
