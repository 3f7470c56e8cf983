package runview

import (
	"os"

	"golang.org/x/term"
)

// WithStdio wires cfg to this process's terminal: stdout, stderr, and
// approval answers from the terminal when stdin is one. Answers are read
// from /dev/tty when it opens, because a read there can be abandoned
// when the CLI withdraws its question (os.Stdin's cannot). Styling is on
// only when stdout is a terminal and NO_COLOR is unset or empty. Call the returned func when the run is over.
func WithStdio(cfg Config) (Config, func()) {
	cfg.Out, cfg.Err, cfg.In = os.Stdout, os.Stderr, os.Stdin
	cfg.InTerminal = isTerminal(os.Stdin)
	cfg.OutTerminal = isTerminal(os.Stdout)
	cfg.ErrTerminal = isTerminal(os.Stderr)
	cfg.Color = ColorWanted(cfg.OutTerminal, os.Getenv("NO_COLOR"))
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

// ColorWanted says whether output is styled: only on a terminal, and not
// when NO_COLOR is set to anything but the empty string (no-color.org).
func ColorWanted(outTerminal bool, noColor string) bool {
	return outTerminal && noColor == ""
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
