package claudecli

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
	"github.com/tetherhq/tether/runner"
)

// errRelayOnly is returned for calls that need relay mode.
var errRelayOnly = errors.New("claudecli: raw input needs a relay session (init with host_control)")

// sdkAgent runs the CLI through the Go SDK: the runner speaks the control
// protocol, and output lines are handed on verbatim.
type sdkAgent struct {
	client *claude.Client
	out    chan item
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

type item struct {
	msg claude.Message
	err error
}

func newSDKAgent(client *claude.Client) *sdkAgent {
	ctx, stop := context.WithCancel(context.Background())
	a := &sdkAgent{client: client, out: make(chan item), stop: stop}
	a.wg.Add(1)
	go a.pump(ctx)
	return a
}

// pump moves messages from the client to Next; it ends with the output.
func (a *sdkAgent) pump(ctx context.Context) {
	defer a.wg.Done()
	defer close(a.out)
	for msg, err := range a.client.Messages(ctx) {
		select {
		case a.out <- item{msg, err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

func (a *sdkAgent) Next(ctx context.Context) (runner.Output, error) {
	select {
	case it, ok := <-a.out:
		if !ok {
			return runner.Output{}, errEnded(a.client)
		}
		if it.err != nil {
			return runner.Output{}, it.err
		}
		out := runner.Output{Line: it.msg.Raw()}
		if r, ok := it.msg.(*claude.ResultMessage); ok {
			out.TurnEnded, out.TurnFailed = true, r.IsError
		}
		return out, nil
	case <-ctx.Done():
		return runner.Output{}, ctx.Err()
	}
}

// ErrAgentEnded is returned by Next once the CLI's output has ended cleanly.
var ErrAgentEnded = errors.New("claudecli: agent output ended")

func errEnded(c *claude.Client) error {
	if err := c.Err(); err != nil {
		return err
	}
	return ErrAgentEnded
}

func (a *sdkAgent) Prompt(ctx context.Context, prompt json.RawMessage) error {
	in, err := userInput(prompt)
	if err != nil {
		return err
	}
	return a.client.Send(ctx, in)
}

func (a *sdkAgent) Control(ctx context.Context, subtype string, params json.RawMessage) (json.RawMessage, error) {
	if err := checkControlSubtype(subtype); err != nil {
		return nil, err
	}
	var p map[string]any
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
	}
	return a.client.Control(ctx, cc.GenericRequest{Name: subtype, Params: p})
}

func (a *sdkAgent) Interrupt(ctx context.Context) error { return a.client.Interrupt(ctx) }

func (a *sdkAgent) Input(context.Context, []byte) error { return errRelayOnly }

func (a *sdkAgent) Close() error {
	err := a.client.Close()
	a.stop()
	a.wg.Wait()
	return err
}

// userInput turns a v1 prompt (a string or content blocks) into a user line.
func userInput(prompt json.RawMessage) (claude.UserInput, error) {
	var content cc.Content
	if err := json.Unmarshal(prompt, &content); err != nil {
		return claude.UserInput{}, err
	}
	return claude.UserInput{Content: content}, nil
}
