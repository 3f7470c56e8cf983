package sessionsapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/safe"
)

// isWebSocket says whether r asks to upgrade: the event streams answer
// such a request over WebSocket instead of Server-Sent Events.
func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// streamWS runs an event stream over WebSocket: one text message per
// event, {"id": N, "event": …} with N the seq (or the feed position) a
// client passes back as ?after= to resume, a ping every Heartbeat (a peer that stops answering is dropped),
// and a close with a reason when the stream fails or ends. The client
// sends nothing; a message from it closes the stream.
func (a *api) streamWS(w http.ResponseWriter, r *http.Request, produce func(context.Context, func(uint64, agent.Event) bool) error) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered the request
	}
	defer ws.CloseNow()
	ctx := ws.CloseRead(r.Context())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pingDone := make(chan struct{})
	go func() {
		defer close(pingDone)
		defer safe.Recover(a.cfg.Logger, "sessions API ping", func(*safe.PanicError) { cancel() })
		a.keepAlive(ctx, ws, cancel)
	}()
	defer func() { cancel(); <-pingDone }()
	err = produce(ctx, func(id uint64, e agent.Event) bool {
		data, err := e.AppendLogged(fmt.Appendf(nil, `{"id":%d,"event":`, id))
		if err != nil {
			return false
		}
		data = append(data, '}')
		return ws.Write(ctx, websocket.MessageText, data) == nil
	})
	switch {
	case ctx.Err() != nil:
	case err != nil:
		_ = ws.Close(websocket.StatusInternalError, truncateReason("stream_failed: "+err.Error()))
	default:
		_ = ws.Close(websocket.StatusNormalClosure, "stream ended")
	}
}

// keepAlive pings the peer every Heartbeat and cancels the stream when a
// ping is not answered within one.
func (a *api) keepAlive(ctx context.Context, ws *websocket.Conn, cancel context.CancelFunc) {
	tick := time.NewTicker(a.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			pctx, pcancel := context.WithTimeout(ctx, a.cfg.Heartbeat)
			err := ws.Ping(pctx)
			pcancel()
			if err != nil {
				cancel()
				return
			}
		}
	}
}

// truncateReason fits a close reason into a control frame (123 bytes).
func truncateReason(s string) string {
	if len(s) <= 123 {
		return s
	}
	return strings.ToValidUTF8(s[:120], "") + "..."
}
