package acp

import (
	"context"
	"errors"
	"io/fs"

	acpsdk "github.com/coder/acp-go-sdk"
)

// client answers the methods the agent calls; it is the session's side of
// the ACP connection.
type client struct{ s *session }

var _ acpsdk.Client = client{}

func (c client) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	c.s.update(n)
	return nil
}

func (c client) RequestPermission(ctx context.Context, req acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	return c.s.requestPermission(ctx, req)
}

// ReadTextFile reads inside the workspace only; a missing file is ACP's
// resource-not-found error, which agents take for "no such file".
func (c client) ReadTextFile(_ context.Context, req acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	if !c.s.d.spec.FileSystem {
		return acpsdk.ReadTextFileResponse{}, acpsdk.NewMethodNotFound("fs/read_text_file")
	}
	text, err := c.s.ws.read(req.Path, req.Line, req.Limit)
	if err != nil {
		return acpsdk.ReadTextFileResponse{}, fsError(err, req.Path)
	}
	return acpsdk.ReadTextFileResponse{Content: text}, nil
}

func (c client) WriteTextFile(_ context.Context, req acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	if !c.s.d.spec.FileSystem {
		return acpsdk.WriteTextFileResponse{}, acpsdk.NewMethodNotFound("fs/write_text_file")
	}
	if err := c.s.ws.write(req.Path, req.Content); err != nil {
		return acpsdk.WriteTextFileResponse{}, fsError(err, req.Path)
	}
	return acpsdk.WriteTextFileResponse{}, nil
}

// fsError is err as a JSON-RPC error the agent can read.
func fsError(err error, path string) *acpsdk.RequestError {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &acpsdk.RequestError{Code: -32002, Message: "Resource not found: " + path}
	case errors.Is(err, ErrOutsideWorkspace):
		return acpsdk.NewInvalidParams(map[string]any{"path": path, "error": err.Error()})
	}
	return acpsdk.NewInternalError(map[string]any{"error": err.Error()})
}

// Terminals are not offered (the client's capabilities say so): the
// agent's own shell runs inside the sandbox with the agent.
func (c client) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, notOffered("terminal/create")
}

func (c client) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, notOffered("terminal/kill")
}

func (c client) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, notOffered("terminal/output")
}

func (c client) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, notOffered("terminal/release")
}

func (c client) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, notOffered("terminal/wait_for_exit")
}

func notOffered(method string) error { return acpsdk.NewMethodNotFound(method) }
