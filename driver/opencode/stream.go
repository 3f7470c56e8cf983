package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tetherhq/tether/agent"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

// Reconnection of the event stream: the first retry comes quickly, later
// ones back off up to reconnectMax.
const (
	reconnectMin = 50 * time.Millisecond
	reconnectMax = time.Second
)

// streamIdle is how long the stream may say nothing before it is taken for
// dead and opened again: the server sends a heartbeat every 10 s.
const streamIdle = 35 * time.Second

// eventStream is one GET /event connection.
type eventStream struct {
	body   io.ReadCloser
	events *oc.EventReader
	cancel context.CancelFunc
}

func (e *eventStream) close() {
	e.cancel()
	_ = e.body.Close()
}

// subscribe opens the event stream and waits for its server.connected, so
// that every event after it reaches the session. ctx bounds the wait; the
// stream lives until the session's end.
func (s *session) subscribe(ctx context.Context) (*eventStream, error) {
	sctx, cancel := context.WithCancel(s.ctx)
	stop := context.AfterFunc(ctx, cancel) // give up the connect with ctx
	body, err := s.api.events(sctx)
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	st := &eventStream{body: body, events: oc.NewEventReader(body, 0), cancel: cancel}
	for {
		ev, err := st.events.Next()
		if errors.Is(err, oc.ErrSkipped) {
			continue
		}
		if err != nil {
			stop()
			st.close()
			return nil, fmt.Errorf("opencode: event stream: %w", err)
		}
		if ev.Type == oc.EventServerConnected {
			if !stop() { // ctx ended just now: the stream was cancelled with it
				st.close()
				return nil, fmt.Errorf("opencode: event stream: %w", ctx.Err())
			}
			return st, nil
		}
	}
}

// follow reads the event stream until the session ends, reconnecting when
// it drops while the server lives; then it reports the session's end.
func (s *session) follow(stream *eventStream) {
	defer s.wg.Done()
	defer s.out.Close()
	for stream != nil {
		err := s.read(stream)
		stream.close()
		if s.ctx.Err() != nil || s.exited() {
			break
		}
		s.d.log.Debug("opencode: event stream dropped; reconnecting", "session", s.native, "err", err)
		stream = s.reconnect()
		if stream != nil {
			s.reconcile()
		}
	}
	s.finish()
}

// read maps the stream's events until it ends (or goes quiet for longer
// than the server's heartbeat allows).
func (s *session) read(stream *eventStream) error {
	idle := time.AfterFunc(streamIdle, stream.cancel)
	defer idle.Stop()
	for {
		ev, err := stream.events.Next()
		idle.Stop() // a reader of Events that holds the queue full is not a dead stream
		if err != nil && !errors.Is(err, oc.ErrSkipped) {
			return err
		}
		s.mu.Lock()
		if err != nil {
			s.out.Add(s.mapper.protocolError(skippedData(err), err))
		} else if s.mine(ev) {
			s.apply(s.mapper.handle(ev))
		}
		s.mu.Unlock()
		if s.out.WaitRoom(s.ctx) != nil {
			return s.ctx.Err()
		}
		idle.Reset(streamIdle)
	}
}

// mine reports whether ev is about this session (the server also reports
// itself and its subagents' sessions). A subagent's permission requests
// are the session's too: its tool calls wait for them. Call with mu held.
func (s *session) mine(ev *oc.Event) bool {
	if ev.IsNoise() {
		return false
	}
	id := ev.SessionID()
	switch p := ev.Payload.(type) {
	case *oc.SessionCreated:
		if p.Info.ParentID == s.native || s.children[p.Info.ParentID] {
			s.children[p.Info.ID] = true
		}
	case *oc.PermissionAsked, *oc.PermissionReplied, *oc.QuestionAsked, *oc.QuestionReplied, *oc.QuestionRejected:
		return id == s.native || s.children[id]
	}
	return id == s.native
}

// apply hands events over and stops the turn's timer once it ended; call
// with mu held.
func (s *session) apply(events []agent.Event) {
	s.out.Add(events...)
	if !s.mapper.running() {
		s.stopTimerLocked()
	}
}

// skippedData is the data of an event the reader could not decode.
func skippedData(err error) []byte {
	var de *oc.DecodeError
	if errors.As(err, &de) {
		return de.Data
	}
	return []byte(err.Error())
}

// exited reports whether the server's process has ended.
func (s *session) exited() bool {
	select {
	case <-s.srv.exited:
		return true
	default:
		return false
	}
}

// reconnect opens the stream again, backing off, until it succeeds, the
// session closes or the server's process ends (nil then).
func (s *session) reconnect() *eventStream {
	wait := s.d.reconnectWait
	if wait <= 0 {
		wait = reconnectMin
	}
	for {
		select {
		case <-s.ctx.Done():
			return nil
		case <-s.srv.exited:
			return nil
		case <-time.After(wait):
		}
		ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
		stream, err := s.subscribe(ctx)
		cancel()
		if err == nil {
			s.mu.Lock()
			s.stream = stream
			s.mu.Unlock()
			return stream
		}
		s.d.log.Debug("opencode: event stream reconnect failed", "session", s.native, "err", err)
		wait = min(2*wait, reconnectMax)
	}
}

// reconcile catches up on what the stream missed while it was down: the
// session's messages (every message and part is mapped as if it had been
// sent whole; the mapper reports only what it had not), its pending
// permissions, and whether it went idle meanwhile. The stream is open
// again before, so nothing after the reconciliation is missed either.
func (s *session) reconcile() {
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	msgs, err := s.history(ctx)
	if err != nil {
		s.d.log.Warn("opencode: reconcile after a reconnect", "session", s.native, "err", err)
		return
	}
	var pending []oc.PermissionRequest
	perr := s.api.do(ctx, http.MethodGet, oc.PathPermissions, nil, &pending)
	var status map[string]oc.SessionStatus
	serr := s.api.do(ctx, http.MethodGet, oc.PathSessionStatus, nil, &status)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, msg := range msgs {
		info := &oc.MessageUpdated{SessionID: s.native, Info: msg.Info}
		raw, _ := json.Marshal(info)
		s.apply(s.mapper.messageUpdated(info, raw))
		for _, part := range msg.Parts {
			raw, _ := json.Marshal(part)
			s.apply(s.mapper.partUpdated(part, raw))
		}
	}
	if perr == nil {
		for i := range pending {
			if pending[i].SessionID == s.native || s.children[pending[i].SessionID] {
				raw, _ := json.Marshal(pending[i])
				s.apply(s.mapper.permissionAsked(&pending[i], raw))
			}
		}
	}
	// The idle the stream missed: the session is not busy, and the turn
	// has an answer that is closed.
	if st, busy := status[s.native]; serr == nil && (!busy || st.Type == oc.StatusIdle) && s.mapper.answered() {
		s.apply(s.mapper.endTurn(nil))
	}
}

// finish reports the session's end: closed by Close, or the server's
// process exited (a running turn fails with agent_exited).
func (s *session) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	s.stopTimerLocked()
	if s.ctx.Err() != nil { // closed by the host, which so interrupts a running turn
		s.out.Add(s.mapper.abort(nil)...)
		s.out.Add(s.mapper.ended("closed", nil))
		return
	}
	msg := "the opencode server exited"
	select {
	case <-s.srv.exited:
		if err := s.srv.exitError(); err != nil {
			msg += ": " + err.Error()
		}
	default:
	}
	why := &agent.Error{Code: agent.ErrorAgentExit, Message: msg}
	s.out.Add(s.mapper.abort(why)...)
	s.out.Add(s.mapper.ended("exited", why))
}
