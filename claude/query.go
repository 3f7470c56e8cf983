package claude

import (
	"context"
	"iter"
)

// Query runs one prompt in a fresh CLI process and yields its messages up to
// the result. The process is stopped when iteration ends, early or not.
//
// stdin stays open while the CLI may still call back (permission, hook or
// MCP callbacks with delegated tasks running), so those never fail with
// "Stream closed".
func Query(ctx context.Context, prompt string, opts Options) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		c, err := Connect(ctx, opts)
		if err != nil {
			yield(nil, err)
			return
		}
		defer c.Close()
		if err := c.Query(ctx, prompt); err != nil {
			yield(nil, err)
			return
		}
		for {
			for msg, err := range c.Receive(ctx) {
				if !yield(msg, err) || err != nil {
					return
				}
			}
			if !opts.hasCallbacks() || !c.HasLiveTasks() {
				return
			}
		}
	}
}
