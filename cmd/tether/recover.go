package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/eventlog/boltfile"
)

const recoverLong = `Recover saves what can still be read of a damaged event log (DATA/events.db)
or approvals store (DATA/approvals.db), the files tether serve, tether daemon
and tether shim keep in their data directory. They refuse to start on a
damaged one, and say so.

Each file that is damaged is read, never written, and every session and event
(every approval) that can be read is written into a new file beside it,
DATA/events.db.recovered (DATA/approvals.db.recovered). Recover says, per
session, what it saved and what it could not read, and how to put the new file
in place; --replace does that itself, keeping the damaged file as
events.db.damaged-TIME. A file that is not damaged is left alone.

Stop what runs on DATA first: a file in use is not read.`

func newRecoverCmd() *cobra.Command {
	var data string
	var replace bool
	cmd := &cobra.Command{
		Use:   "recover --data DIR",
		Short: "Save what can be read of a damaged event log or approvals store",
		Long:  recoverLong,
		Example: `  tether recover --data tether-data              # writes tether-data/events.db.recovered, says what it saved
  tether recover --data tether-data --replace    # and puts it in place`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if data == "" {
				return errors.New("--data is required: the data directory of the runner, daemon or shim")
			}
			r := recoverer{ctx: cmd.Context(), out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), dir: data, replace: replace, now: time.Now()}
			return codeErr(r.run())
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "the data `DIR` (tether serve's and tether daemon's --data, tether shim's --data-dir)")
	cmd.Flags().BoolVar(&replace, "replace", false, "put each recovered file in place, keeping the damaged one under a new name")
	return cmd
}

// recoverer recovers the stores of one data directory.
type recoverer struct {
	ctx     context.Context
	out     io.Writer
	errOut  io.Writer
	dir     string
	replace bool
	now     time.Time
}

// A store, as recover handles it: its file and its salvage, which writes
// the new file and reports.
type store struct {
	file    string
	salvage func(ctx context.Context, src, dst string, out io.Writer) error
}

var stores = []store{
	{"events.db", salvageEvents},
	{"approvals.db", salvageApprovals},
}

func (r recoverer) run() int {
	code := 0
	var moves []string
	for _, s := range stores {
		move, err := r.recoverStore(s)
		if err != nil {
			fmt.Fprintf(r.errOut, "tether recover: %v\n", err)
			code = 1
		}
		if move != "" {
			moves = append(moves, move)
		}
	}
	if len(moves) > 0 {
		fmt.Fprintf(r.out, "\nTo use the recovered files, with tether stopped:\n  %s\nor run this command again with --replace.\n",
			strings.Join(moves, " && \\\n  "))
	}
	return code
}

// recoverStore checks one store, salvages it when it is damaged and, with
// --replace, puts the new file in place. It returns the commands that
// would put it in place when it did not.
func (r recoverer) recoverStore(s store) (move string, err error) {
	path := filepath.Join(r.dir, s.file)
	err = boltfile.Check(path)
	var damaged *boltfile.DamagedError
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(r.out, "%s: none (nothing to recover).\n", path)
		return "", nil
	case errors.Is(err, boltfile.ErrInUse):
		return "", fmt.Errorf("%s is in use: stop the tether that runs on %s first", path, r.dir)
	case err == nil:
		fmt.Fprintf(r.out, "%s: not damaged (left alone).\n", path)
		return "", nil
	case !errors.As(err, &damaged):
		return "", err
	}
	fmt.Fprintf(r.out, "%v.\n", damaged)
	recovered := path + ".recovered"
	if err := os.Remove(recovered); err != nil && !errors.Is(err, os.ErrNotExist) { // an earlier run's
		return "", err
	}
	fmt.Fprintf(r.out, "Saved into %s:\n", recovered)
	if err := s.salvage(r.ctx, path, recovered, r.out); err != nil {
		_ = os.Remove(recovered)
		return "", err
	}
	keep := path + ".damaged-" + r.now.UTC().Format("20060102T150405Z")
	if !r.replace {
		return fmt.Sprintf("mv %s %s && mv %s %s", shellQuote(path), shellQuote(keep), shellQuote(recovered), shellQuote(path)), nil
	}
	if _, err := os.Lstat(keep); err == nil {
		return "", fmt.Errorf("%s exists already: not replacing %s", keep, path)
	}
	if err := os.Rename(path, keep); err != nil {
		return "", err
	}
	if err := os.Rename(recovered, path); err != nil {
		return "", err
	}
	fmt.Fprintf(r.out, "Put in place: %s is the recovered file; the damaged one is %s.\n", path, keep)
	return "", syncDir(r.dir)
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func salvageEvents(ctx context.Context, src, dst string, out io.Writer) error {
	rep, err := eventlog.Salvage(ctx, src, dst)
	if err != nil {
		return err
	}
	if rep.Note != "" {
		fmt.Fprintf(out, "  (%s)\n", rep.Note)
	}
	for _, s := range rep.Sessions {
		fmt.Fprintf(out, "  session %s: %s\n", s.Name, sessionLine(s))
		for _, p := range s.Problems {
			fmt.Fprintf(out, "    could not read %s\n", p)
		}
	}
	for _, l := range rep.Lost {
		fmt.Fprintf(out, "  lost: %s\n", l)
	}
	if len(rep.Sessions) == 0 {
		fmt.Fprintln(out, "  no session could be read: the new log is empty")
	}
	return nil
}

// sessionLine says what was saved of a session.
func sessionLine(s eventlog.SessionSalvage) string {
	var b strings.Builder
	switch {
	case s.Saved == 0:
		b.WriteString("no event saved")
	case s.Complete():
		fmt.Fprintf(&b, "all %d events saved (%d..%d)", s.Saved, s.First, s.Last)
	default:
		fmt.Fprintf(&b, "%d events saved (%d..%d)", s.Saved, s.First, s.Last)
	}
	if len(s.Missing) > 0 {
		var r []string
		for _, m := range s.Missing {
			if m.From == 0 {
				r = append(r, fmt.Sprintf("up to %d", m.To))
			} else {
				r = append(r, fmt.Sprintf("%d..%d", m.From, m.To))
			}
		}
		fmt.Fprintf(&b, "; missing %s", strings.Join(r, ", "))
	}
	if s.LastSeq > 0 {
		fmt.Fprintf(&b, "; it goes on after %d", s.LastSeq)
	}
	if s.Previous {
		b.WriteString("; some of it as the log was one transaction before its last")
	}
	return b.String()
}

func salvageApprovals(ctx context.Context, src, dst string, out io.Writer) error {
	rep, err := approvals.Salvage(ctx, src, dst)
	if err != nil {
		return err
	}
	if rep.Note != "" {
		fmt.Fprintf(out, "  (%s)\n", rep.Note)
	}
	for _, s := range rep.Sessions {
		fmt.Fprintf(out, "  session %s: %s saved (%d waiting for an answer)", s.Session, count(s.Saved, "approval"), s.Pending)
		if s.Outside > 0 {
			fmt.Fprintf(out, ", %d of them found on pages the store no longer reached (maybe in an older state)", s.Outside)
		}
		fmt.Fprintln(out)
	}
	for _, l := range rep.Lost {
		fmt.Fprintf(out, "  lost: %s\n", l)
	}
	if len(rep.Sessions) == 0 {
		fmt.Fprintln(out, "  no approval could be read: the new store is empty")
	}
	return nil
}

// count is "1 thing", "2 things".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
