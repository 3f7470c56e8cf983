//go:build !linux

package contain

import "time"

// Elsewhere than on Linux neither mode exists: agents get their process
// group only.

func Delegated() (string, error) { return "", ErrUnsupported }

type Cgroup struct{ Dir string }

func NewCgroup(string) (*Cgroup, error)      { return nil, ErrUnsupported }
func (g *Cgroup) FD() int                    { return -1 }
func (g *Cgroup) CloseFD()                   {}
func (g *Cgroup) Kill() error                { return ErrUnsupported }
func (g *Cgroup) Remove(time.Duration) error { return nil }

func RemoveStale(string, time.Duration) int { return 0 }

func IsSubreaper() bool { return false }

type Reaper struct{}

func StartReaper() (*Reaper, error) { return nil, ErrUnsupported }
func (r *Reaper) Stop()             {}
func ReapOrphans()                  {}

type Sweep struct{}

func KillMarked(string, int) *Sweep         { return &Sweep{} }
func (s *Sweep) Len() int                   { return 0 }
func (s *Sweep) Settle(time.Duration) error { return nil }
