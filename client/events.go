package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
)

// MaxEventSize is the largest event the stream reader accepts.
const MaxEventSize = 16 << 20

// Events yields a session's events after seq `after`, live, until the
// session has ended. A dropped connection is reopened with the last seq
// seen (Last-Event-ID), so nothing is lost or repeated; it gives up after
// retries failed attempts in a row (0 means 5), waiting a little longer
// each time.
func (c *Client) Events(ctx context.Context, id string, after uint64, retries int) iter.Seq2[agent.Event, error] {
	path := "/v1/sessions/" + url.PathEscape(id) + "/events"
	return func(yield func(agent.Event, error) bool) {
		c.follow(ctx, path, after, retries, true, func(_ uint64, e agent.Event, err error) bool { return yield(e, err) })
	}
}

// FeedEvent is an event of the runner-wide feed and its position there.
type FeedEvent struct {
	Pos   uint64
	Event agent.Event
}

// Feed yields every session's events from feed position `after` on, live,
// until ctx ends; it reconnects as Events does.
func (c *Client) Feed(ctx context.Context, after uint64, retries int) iter.Seq2[FeedEvent, error] {
	return func(yield func(FeedEvent, error) bool) {
		c.follow(ctx, "/v1/events", after, retries, false, func(pos uint64, e agent.Event, err error) bool {
			return yield(FeedEvent{Pos: pos, Event: e}, err)
		})
	}
}

// follow reads an event stream at path, reconnecting from the last id
// seen; untilEnd stops after session.ended.
func (c *Client) follow(ctx context.Context, path string, after uint64, retries int, untilEnd bool, yield func(uint64, agent.Event, error) bool) {
	if retries <= 0 {
		retries = 5
	}
	fail := func(err error) { yield(0, agent.Event{}, err) }
	failures := 0
	for {
		ended, progressed, err := c.streamOnce(ctx, path, &after, untilEnd, yield)
		switch {
		case ended:
			return
		case err != nil && !retryable(err):
			fail(err)
			return
		case ctx.Err() != nil:
			fail(ctx.Err())
			return
		}
		if progressed {
			failures = 0
		}
		if failures++; failures > retries {
			fail(fmt.Errorf("client: event stream %s: gave up after %d attempts: %w", path, retries, err))
			return
		}
		select {
		case <-time.After(time.Duration(failures) * c.backoff()):
		case <-ctx.Done():
			fail(ctx.Err())
			return
		}
	}
}

// errStopped: the caller stopped the iteration.
var errStopped = errors.New("client: stopped")

func retryable(err error) bool {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr.Status >= 500
	}
	return !errors.Is(err, errStopped)
}

// streamOnce reads one connection's events; ended says the session's end
// was seen (or the caller stopped), progressed that events came. after
// follows the stream's ids.
func (c *Client) streamOnce(ctx context.Context, path string, after *uint64, untilEnd bool, yield func(uint64, agent.Event, error) bool) (ended, progressed bool, err error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base()+path, nil)
	if err != nil {
		return false, false, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Accept", "text/event-stream")
	if *after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(*after, 10))
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return false, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		return false, false, answerError(resp.StatusCode, buf[:n])
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), MaxEventSize)
	var data strings.Builder
	var id uint64
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data.WriteString(d)
			continue
		}
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			id, _ = strconv.ParseUint(v, 10, 64)
			continue
		}
		if line != "" || data.Len() == 0 {
			continue // id:, event:, comments (keep-alives)
		}
		var e agent.Event
		if err := json.Unmarshal([]byte(data.String()), &e); err != nil {
			return false, progressed, fmt.Errorf("client: an event does not decode: %w", err)
		}
		data.Reset()
		if e.Kind == "" { // a stream_error: the runner says why it stopped
			continue
		}
		*after, progressed = id, true
		if !yield(id, e, nil) {
			return true, true, errStopped
		}
		if untilEnd && e.Kind == agent.KindSessionEnded {
			return true, true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, progressed, err
	}
	return false, progressed, errors.New("client: the event stream closed before the session ended")
}

func (c *Client) backoff() time.Duration {
	if c.Backoff > 0 {
		return c.Backoff
	}
	return 200 * time.Millisecond
}
