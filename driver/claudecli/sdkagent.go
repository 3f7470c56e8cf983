package claudecli

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
	"github.com/tetherhq/tether/runner"
)

// errRelayOnly is returned for calls that need relay mode.
var errRelayOnly = errors.New("claudecli: raw input needs a relay session (init with host_control)")

// sdkAgent runs the CLI through the Go SDK: the runner speaks the control
// protocol, and output lines are handed on verbatim. Next takes messages
// straight from the client, so an idle agent costs no goroutine of its own.
type sdkAgent struct {
	client  *claude.Client
	rewrite *bashRewriter // nil without the sandbox's Bash rewrite
}

func newSDKAgent(client *claude.Client, rewrite *bashRewriter) *sdkAgent {
	return &sdkAgent{client: client, rewrite: rewrite}
}

func (a *sdkAgent) Next(ctx context.Context) (runner.Output, error) {
	for msg, err := range a.client.Messages(ctx) {
		if err != nil {
			return runner.Output{}, err
		}
		// A result's permission_denials name the model's command, not
		// the sandbox's wrapper.
		out := runner.Output{Line: a.rewrite.unwrap(msg.Raw())}
		if r, ok := msg.(*claude.ResultMessage); ok {
			out.TurnEnded, out.TurnFailed = true, r.IsError
		}
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return runner.Output{}, err
	}
	return runner.Output{}, errEnded(a.client)
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

func (a *sdkAgent) Close() error { return a.client.Close() }

// userInput turns a v1 prompt (a string or content blocks) into a user line.
func userInput(prompt json.RawMessage) (claude.UserInput, error) {
	var content cc.Content
	if err := json.Unmarshal(prompt, &content); err != nil {
		return claude.UserInput{}, err
	}
	return claude.UserInput{Content: content}, nil
}
