package claude

import (
	"context"
	"errors"
	"fmt"
	"iter"

	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// ErrConcurrentReceive is returned when two goroutines receive at once.
var ErrConcurrentReceive = errors.New("claude: messages are already being received")

// ErrPushedMessages is what Messages and Receive yield for a client whose
// messages go to Options.OnMessage.
var ErrPushedMessages = errors.New("claude: messages go to Options.OnMessage")

// decode parses a line, classifying it in full only when it could be one
// the reader handles itself (see classify). It returns no message for a
// keep-alive or a transcript mirror, which nobody reads.
func decode(line []byte) (Message, error) {
	switch typ := classify(line); typ {
	case cc.TypeKeepAlive, cc.TypeTranscriptMirror:
		return nil, nil
	case "":
		return cc.Parse(line)
	default:
		return cc.ParseAs(typ, line)
	}
}

// readerOwned handles a message that is the reader's own: control
// traffic is answered or routed, keep-alives and transcript mirrors are
// dropped. It says whether msg was one.
func (c *Client) readerOwned(msg Message) bool {
	switch m := msg.(type) {
	case *cc.ControlRequest, *cc.ControlResponse, *cc.ControlCancelRequest:
		c.route(msg)
		return true
	case *cc.KeepAlive:
		return true
	case *cc.Unknown:
		return m.MessageType == cc.TypeTranscriptMirror
	}
	return false
}

// Query sends a text prompt as a new turn.
func (c *Client) Query(ctx context.Context, prompt string) error {
	return c.Send(ctx, UserInput{Content: Content{TextBlock{Text: prompt}}})
}

// Send writes one user message (text, images, …) to the CLI.
func (c *Client) Send(ctx context.Context, in UserInput) error {
	line, err := cc.EncodeUserInput(in)
	if err != nil {
		return err
	}
	if err := c.conn.Write(ctx, line); err != nil {
		return fmt.Errorf("claude: send prompt: %w", c.writeErr(err))
	}
	return nil
}

// SendStream writes user messages as they come, until msgs ends.
func (c *Client) SendStream(ctx context.Context, msgs iter.Seq[UserInput]) error {
	for in := range msgs {
		if err := c.Send(ctx, in); err != nil {
			return err
		}
	}
	return nil
}

// Messages yields every message until the CLI's output ends. A failure of
// the CLI is yielded as the last error.
func (c *Client) Messages(ctx context.Context) iter.Seq2[Message, error] {
	return c.receive(ctx, false)
}

// Receive yields messages up to and including the next result. If the
// output ends first it yields ErrNoResult (or the CLI's failure).
func (c *Client) Receive(ctx context.Context) iter.Seq2[Message, error] {
	return c.receive(ctx, true)
}

func (c *Client) receive(ctx context.Context, untilResult bool) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		if c.opts.OnMessage != nil {
			yield(nil, ErrPushedMessages)
			return
		}
		if !c.receiving.CompareAndSwap(false, true) {
			yield(nil, ErrConcurrentReceive)
			return
		}
		defer c.receiving.Store(false)
		for {
			it, ok, err := c.queue.pop(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			if !ok {
				if untilResult {
					yield(nil, ErrNoResult)
				}
				return
			}
			if it.err != nil {
				yield(nil, it.err)
				return
			}
			msg := it.msg
			c.observe(msg)
			if !yield(msg, nil) {
				return
			}
			if _, isResult := msg.(*ResultMessage); isResult && untilResult {
				return
			}
		}
	}
}
