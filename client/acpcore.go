package client

import (
	"context"
	"net/url"

	"github.com/tetherhq/tether/agent"
)

// PromptWith starts a turn with the whole prompt.
func (c *Client) PromptWith(ctx context.Context, id string, p agent.Prompt) error {
	return c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(id)+"/prompt", p, nil)
}
