//go:build !linux

package transport

import (
	"errors"
	"os"
)

// watcher has nothing to watch with here: every child gets goroutines of
// its own for its exit and its stderr.
type watcher struct{}

var errNotWatching = errors.New("transport: cannot watch the child here")

func (*watcher) watchExit(int, func(error)) error { return errNotWatching }

func (*watcher) watchReadable(*os.File, func()) (int32, error) { return 0, errNotWatching }

func (*watcher) rearm(int32) error { return errNotWatching }

func (*watcher) unwatch(int32) {}
