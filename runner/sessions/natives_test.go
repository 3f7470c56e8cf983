package sessions_test

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
)

// nativeWriter is the mock whose sessions, after each turn's start, give
// n native events of the payloads raws (in turn), vouched for or not,
// as fast as the session takes them.
type nativeWriter struct {
	agent.Driver
	raws    []string
	n       int
	checked bool
}

func newNativeWriter(n int, checked bool, raws ...string) nativeWriter {
	return nativeWriter{Driver: mock.New(mock.Config{}), raws: raws, n: n, checked: checked}
}

func (d nativeWriter) Start(ctx context.Context, req agent.StartRequest) (agent.Session, error) {
	s, err := d.Driver.Start(ctx, req)
	return nativeSession{s, d}, err
}

type nativeSession struct {
	agent.Session
	d nativeWriter
}

func (s nativeSession) Events(ctx context.Context) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		for e, err := range s.Session.Events(ctx) {
			if !yield(e, err) {
				return
			}
			if e.Kind != agent.KindTurnStarted {
				continue
			}
			for i := range s.d.n {
				native := agent.Event{Kind: agent.KindNative, SessionID: e.SessionID, TurnID: e.TurnID, Time: e.Time,
					Raw: json.RawMessage(s.d.raws[i%len(s.d.raws)]), RawChecked: s.d.checked}
				if !yield(native, nil) {
					return
				}
			}
		}
	}
}
