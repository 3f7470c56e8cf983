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
	if retries <= 0 {
		retries = 5
	}
	return func(yield func(agent.Event, error) bool) {
		failures := 0
		for {
			ended, progressed, err := c.streamOnce(ctx, id, &after, yield)
			switch {
			case ended:
				return
			case err != nil && !retryable(err):
				yield(agent.Event{}, err)
				return
			case ctx.Err() != nil:
				yield(agent.Event{}, ctx.Err())
				return
			}
			if progressed {
				failures = 0
			}
			if failures++; failures > retries {
				yield(agent.Event{}, fmt.Errorf("client: event stream of %s: gave up after %d attempts: %w", id, retries, err))
				return
			}
			select {
			case <-time.After(time.Duration(failures) * c.backoff()):
			case <-ctx.Done():
				yield(agent.Event{}, ctx.Err())
				return
			}
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
// was seen (or the caller stopped), progressed that events came.
func (c *Client) streamOnce(ctx context.Context, id string, after *uint64, yield func(agent.Event, error) bool) (ended, progressed bool, err error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base()+"/v1/sessions/"+url.PathEscape(id)+"/events", nil)
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
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data.WriteString(d)
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
		*after, progressed = uint64(e.Seq), true
		if !yield(e, nil) {
			return true, true, errStopped
		}
		if e.Kind == agent.KindSessionEnded {
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
