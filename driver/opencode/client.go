package opencode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	oc "github.com/tetherhq/tether/protocol/opencode"
)

// requestTimeout bounds an API call whose context has no deadline.
const requestTimeout = 30 * time.Second

// maxResponse caps a response body the client reads whole (a long
// session's messages carry every tool output).
const maxResponse = 256 << 20

// client calls one `opencode serve` over loopback with its password,
// never through a proxy; close drops its connections. It keeps no
// connection between calls: a session's calls come seconds apart at best
// (a prompt, the answer to an approval), a loopback connection costs
// microseconds, and one kept would hold two goroutines and their buffers
// for every idle session.
type client struct {
	base     string
	password string
	hc       *http.Client
	tr       *http.Transport
}

// newTransport is the transport of a driver's clients: with no connection
// kept, one serves every session's server.
func newTransport() *http.Transport {
	return &http.Transport{Proxy: nil, DisableKeepAlives: true, DisableCompression: true}
}

// newClient calls base through tr (nil: a transport of its own).
func newClient(base, password string, tr *http.Transport) *client {
	if tr == nil {
		tr = newTransport()
	}
	return &client{base: base, password: password, tr: tr, hc: &http.Client{Transport: tr}}
}

func (c *client) close() { c.tr.CloseIdleConnections() }

func (c *client) request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("opencode: %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("opencode: %s %s: %w", method, path, err)
	}
	req.SetBasicAuth(serverUser, c.password)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// do sends one request and decodes a 2xx answer into out (nil: ignore it);
// any other answer is a *oc.ResponseError.
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, requestTimeout)
		defer cancel()
	}
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("opencode: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("opencode: %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("opencode: %s %s: %w", method, path, oc.ParseResponseError(resp.StatusCode, data))
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("opencode: %s %s: %w", method, path, err)
	}
	return nil
}

func (c *client) health(ctx context.Context) (oc.Health, error) {
	var h oc.Health
	err := c.do(ctx, http.MethodGet, oc.PathHealth, nil, &h)
	return h, err
}

// streamReadSize is the buffer the event stream's response is read
// through: its header lines and chunk sizes; event data larger than it is
// read past it.
const streamReadSize = 1 << 10

// events opens GET /event; the body streams until ctx ends or the server
// drops it. It has a connection of its own, read only by the caller: an
// http.Transport would add its connection's reader and writer, two
// goroutines for the session's whole life.
func (c *client) events(ctx context.Context) (io.ReadCloser, error) {
	req, err := c.request(ctx, http.MethodGet, oc.PathEvent, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	fail := func(err error) error { return fmt.Errorf("opencode: GET %s: %w", oc.PathEvent, err) }
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", req.URL.Host)
	if err != nil {
		return nil, fail(err)
	}
	// ctx's end closes the connection, which ends a blocked read.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	body, err := c.openStream(conn, req)
	if err != nil {
		stop()
		_ = conn.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fail(err)
	}
	return &streamBody{ReadCloser: body, conn: conn, stop: stop}, nil
}

// openStream sends req on conn and returns the body of a 200 answer.
func (c *client) openStream(conn net.Conn, req *http.Request) (io.ReadCloser, error) {
	if err := req.Write(conn); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, streamReadSize), req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, oc.ParseResponseError(resp.StatusCode, data)
	}
	return resp.Body, nil
}

// streamBody is the event stream's body; closing it closes its connection.
type streamBody struct {
	io.ReadCloser
	conn net.Conn
	stop func() bool
}

func (b *streamBody) Close() error {
	b.stop()
	return b.conn.Close()
}
