//go:build !linux

package transport

import "errors"

// waitExited is not available here: the leader is reaped without the group
// sweep that needs it alive, and Close's signals cover the group until then.
func waitExited(pid int) error { return errors.ErrUnsupported }
