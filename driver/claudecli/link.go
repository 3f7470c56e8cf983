package claudecli

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// cliLink is how a session talks to its CLI: through the Go SDK, which
// speaks the control protocol itself (sdkLink), or line by line for a
// native client that speaks it (relayLink).
type cliLink interface {
	sessionID() string
	// messages yields what the CLI writes, the sandbox's wrapping of
	// commands still in it. A relay's control lines come too; the SDK's
	// are its own.
	messages(ctx context.Context) iter.Seq2[claude.Message, error]
	send(ctx context.Context, in claude.UserInput) error
	interrupt(ctx context.Context) error
	control(ctx context.Context, subtype string, params json.RawMessage) (json.RawMessage, error)
	// err is why the output ended, nil when it ended cleanly.
	err() error
	close() error
}

// sdkLink is the Go SDK's client.
type sdkLink struct{ c *claude.Client }

func (l sdkLink) sessionID() string { return l.c.SessionID() }

func (l sdkLink) messages(ctx context.Context) iter.Seq2[claude.Message, error] {
	return l.c.Messages(ctx)
}

func (l sdkLink) send(ctx context.Context, in claude.UserInput) error { return l.c.Send(ctx, in) }
func (l sdkLink) interrupt(ctx context.Context) error                 { return l.c.Interrupt(ctx) }
func (l sdkLink) err() error                                          { return l.c.Err() }
func (l sdkLink) close() error                                        { return l.c.Close() }

func (l sdkLink) control(ctx context.Context, subtype string, params json.RawMessage) (json.RawMessage, error) {
	if err := checkControlSubtype(subtype); err != nil {
		return nil, err
	}
	var p map[string]any
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
	}
	return l.c.Control(ctx, cc.GenericRequest{Name: subtype, Params: p})
}
