package transport

import "os"

// busyRead is a read size that shows the agent writing faster than it is
// read: half the default pipe capacity at once.
const busyRead = 32 << 10

// growingPipe is the read end of a stdout pipe that grows (see growPipe)
// once its agent proves busy. Growing every pipe up front would cost idle
// sessions nothing in memory but would count against the user's pipe
// quota (fs/pipe-user-pages-soft): past it the kernel gives every new pipe
// of the user, the agents' own included, a tiny buffer.
type growingPipe struct {
	f     *os.File
	grown bool
}

func (p *growingPipe) Read(b []byte) (int, error) {
	n, err := p.f.Read(b)
	if n >= busyRead && !p.grown {
		p.grown = true
		growPipe(p.f)
	}
	return n, err
}
