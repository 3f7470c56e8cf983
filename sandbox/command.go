package sandbox

import (
	"errors"
	"fmt"
	"os"
)

// Command is a command line that runs a program in the sandbox.
type Command struct {
	// Path is bwrap, Args its arguments (argv[0] excluded), Env the whole
	// environment of the process: bwrap hands it to the program unchanged.
	Path string
	Args []string
	Env  []string
	// Files must become the child's descriptors 3, 4, … in this order
	// (exec.Cmd.ExtraFiles): bwrap reads the sandbox's own /etc/passwd
	// and /etc/group and its seccomp filters from them. Close them once
	// the child has started, or failed to.
	Files []*os.File
}

// Close closes Files.
func (c *Command) Close() error {
	var errs []error
	for _, f := range c.Files {
		if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// maxInlineData bounds what dataFiles puts in one pipe: all of it must fit
// the pipe's buffer, since nobody reads it before the child starts.
const maxInlineData = 32 << 10

// dataFiles returns, for each of data, the read end of a pipe that holds
// it and then ends: what bwrap's --ro-bind-data and --seccomp read.
func dataFiles(data [][]byte) ([]*os.File, error) {
	files := make([]*os.File, 0, len(data))
	fail := func(err error) ([]*os.File, error) {
		(&Command{Files: files}).Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	for _, d := range data {
		if len(d) > maxInlineData {
			return fail(fmt.Errorf("inline file of %d bytes exceeds %d", len(d), maxInlineData))
		}
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		_, err = w.Write(d)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		files = append(files, r)
		if err != nil {
			return fail(err)
		}
	}
	return files, nil
}
