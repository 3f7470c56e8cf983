// Package fakeorchestrator is a Mast orchestrator for tests, written from
// the protocol's description (the seed's semantic generation): it accepts
// daemons on /daemon?token=…, refusing unknown tokens with a raw 401
// before the upgrade; pairs a daemon that opens the pairing socket
// (pair_request, a code confirmed with Verify or POST /pair/verify, then
// pair_response with a dk_ key); sends sync_request on connect when it has
// a store; answers heartbeats; sends commands and waits for their
// command_result (120 s, or "Daemon disconnected"); and caches events the
// way the orchestrator does (message.created adds the message,
// part.created/updated replace its parts, message.completed completes
// it; sync_response upserts messages). Stop and Start simulate a restart:
// the store survives, the connections do not.
package fakeorchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// DevKey is the device key the seed's orchestrator always accepts.
const DevKey = "mast-dev-key-phase1"

// CodeTTL is how long a pairing code stays valid.
const CodeTTL = 5 * time.Minute

// RequestTimeout is how long a command waits for its result.
const RequestTimeout = 120 * time.Second

// Options configure the fake.
type Options struct {
	// Store makes the orchestrator send sync_request on every daemon
	// connect, from its cache, as one with a store configured does.
	Store bool
	// Keys are device keys accepted besides the minted ones and DevKey.
	Keys []string
	// NoDevKey refuses DevKey (the published orchestrator outside dev
	// mode).
	NoDevKey bool
	// Bursts caches events as the seed's orchestrator does when frames
	// come together: its socket hands over every frame of one read at
	// once, and its store adds a created message two awaits later, after
	// the part and completion events of the same read have looked for it
	// and found nothing. Here the frames of one canonical event (the same
	// session and data.seq, which the daemon writes back to back) are
	// such a read: a message they create is added, with no parts, once
	// the next frame comes.
	Bursts bool
}

// Frame is one JSON frame as received.
type Frame map[string]any

// Message is a cached message.
type Message struct {
	ID        string
	Role      string
	Parts     []any
	Completed bool
}

// Result is a command_result.
type Result struct {
	RequestID string          `json:"requestId"`
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// Server is the fake orchestrator.
type Server struct {
	opts Options

	mu      sync.Mutex
	addr    string
	srv     *http.Server
	served  chan struct{}
	changed chan struct{}

	keys    map[string]bool
	pending *pairing
	daemon  *websocket.Conn
	conns   map[*websocket.Conn]bool
	waiting map[string]chan Result

	// What was received, for tests to read.
	events       []Frame
	statuses     []Frame
	heartbeats   []Frame
	syncs        []Frame
	pairRequests []Frame
	unanswered   []Frame // frames of no known type
	connects     int
	rejected     int

	// The store: it survives Stop/Start.
	sessions  map[string][]*Message
	lastEvent string
	// burst and created are, with Bursts, the read the last event frame
	// was in and the messages it created, not yet in the store.
	burst   string
	created []pendingMessage
}

type pendingMessage struct {
	session string
	msg     *Message
}

type pairing struct {
	code    string
	conn    *websocket.Conn
	created time.Time
}

// Start listens on a free loopback port.
func Start(opts Options) (*Server, error) {
	s := &Server{opts: opts, keys: map[string]bool{}, conns: map[*websocket.Conn]bool{},
		waiting: map[string]chan Result{}, sessions: map[string][]*Message{}, changed: make(chan struct{})}
	for _, k := range opts.Keys {
		s.keys[k] = true
	}
	if !opts.NoDevKey {
		s.keys[DevKey] = true
	}
	return s, s.listen("127.0.0.1:0")
}

func (s *Server) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/daemon", s.serveDaemon)
	mux.HandleFunc("POST /pair/verify", s.serveVerify)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	s.mu.Lock()
	s.srv, s.addr, s.served = srv, ln.Addr().String(), served
	s.mu.Unlock()
	go func() { defer close(served); _ = srv.Serve(ln) }()
	return nil
}

// URL is the orchestrator's base URL, as MAST_ORCHESTRATOR_URL gives it.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "ws://" + s.addr
}

// Stop ends the orchestrator as a crash would: the listener and every
// socket close; pending commands fail. The store stays.
func (s *Server) Stop() {
	s.mu.Lock()
	srv, served := s.srv, s.served
	conns := make([]*websocket.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	for _, c := range conns {
		_ = c.CloseNow()
	}
	<-served
	s.mu.Lock()
	for id, ch := range s.waiting {
		ch <- Result{RequestID: id, Status: "error", Error: "Daemon disconnected"}
		delete(s.waiting, id)
	}
	s.daemon, s.pending = nil, nil
	s.mu.Unlock()
	s.notify()
}

// Start listens again on the same address after Stop.
func (s *Server) Start() error {
	s.mu.Lock()
	addr := s.addr
	s.mu.Unlock()
	return s.listen(addr)
}

// Close stops the orchestrator for good.
func (s *Server) Close() { s.Stop() }

func (s *Server) notify() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Wait waits until cond, called under the orchestrator's lock with a view
// of what it received, holds, or ctx ends.
func (s *Server) Wait(ctx context.Context, cond func(v View) bool) error {
	for {
		s.mu.Lock()
		ok := cond(View{s})
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("fakeorchestrator: waiting: %w", ctx.Err())
		}
	}
}

// View reads what the orchestrator received; only valid inside Wait and
// Read.
type View struct{ s *Server }

func (v View) Events() []Frame        { return v.s.events }
func (v View) Statuses() []Frame      { return v.s.statuses }
func (v View) Heartbeats() []Frame    { return v.s.heartbeats }
func (v View) SyncResponses() []Frame { return v.s.syncs }
func (v View) PairRequests() []Frame  { return v.s.pairRequests }
func (v View) Connects() int          { return v.s.connects }
func (v View) Rejected() int          { return v.s.rejected }
func (v View) Connected() bool        { return v.s.daemon != nil }
func (v View) LastEventTimestamp() string {
	return v.s.lastEvent
}

// Messages are a session's cached messages.
func (v View) Messages(sessionID string) []Message {
	var out []Message
	for _, m := range v.s.sessions[sessionID] {
		out = append(out, *m)
	}
	return out
}

// Read calls f with a view, under the lock.
func (s *Server) Read(f func(View)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(View{s})
}

func (s *Server) serveDaemon(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	s.mu.Lock()
	known := s.keys[token]
	if token != "pairing" && !known {
		s.rejected++
	}
	s.mu.Unlock()
	if token != "pairing" && !known {
		s.notify()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	conn.SetReadLimit(16 << 20)
	s.mu.Lock()
	if s.srv == nil {
		s.mu.Unlock()
		_ = conn.CloseNow()
		return
	}
	s.conns[conn] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		_ = conn.CloseNow()
	}()
	if token == "pairing" {
		s.servePairing(r.Context(), conn)
		return
	}
	s.serveAuthenticated(r.Context(), conn)
}

func (s *Server) servePairing(ctx context.Context, conn *websocket.Conn) {
	defer func() {
		s.mu.Lock()
		if s.pending != nil && s.pending.conn == conn { // disconnecting discards the code
			s.pending = nil
		}
		s.mu.Unlock()
	}()
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var f Frame
		if json.Unmarshal(data, &f) != nil || f["type"] != "pair_request" {
			continue
		}
		code, _ := f["pairingCode"].(string)
		s.mu.Lock()
		old := s.pending
		s.pending = &pairing{code: code, conn: conn, created: time.Now()}
		s.pairRequests = append(s.pairRequests, f)
		s.mu.Unlock()
		if old != nil && old.conn != conn {
			_ = send(ctx, old.conn, map[string]any{"type": "pair_response", "success": false, "error": "replaced"})
		}
		s.notify()
	}
}

// Verify confirms a pairing code as the user does (POST /pair/verify):
// it mints a device key and sends it to the waiting daemon.
func (s *Server) Verify(ctx context.Context, code string) (string, error) {
	s.mu.Lock()
	p := s.pending
	switch {
	case p == nil:
		s.mu.Unlock()
		return "", errors.New("no_pending_pairing")
	case time.Since(p.created) > CodeTTL:
		s.pending = nil
		s.mu.Unlock()
		return "", errors.New("code_expired")
	case p.code != code:
		s.mu.Unlock()
		return "", errors.New("invalid_code")
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	key := "dk_" + hex.EncodeToString(b[:])
	s.keys[key] = true
	s.pending = nil
	s.mu.Unlock()
	return key, send(ctx, p.conn, map[string]any{"type": "pair_response", "success": true, "deviceKey": key})
}

// Revoke forgets a device key (the next connection with it gets 401).
func (s *Server) Revoke(key string) {
	s.mu.Lock()
	delete(s.keys, key)
	s.mu.Unlock()
}

func (s *Server) serveVerify(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Code string `json:"code"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Code == "" {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": "Missing code"})
		return
	}
	key, err := s.Verify(r.Context(), body.Code)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"success": false, "error": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "deviceKey": key})
}

func (s *Server) serveAuthenticated(ctx context.Context, conn *websocket.Conn) {
	s.mu.Lock()
	old := s.daemon
	s.daemon = conn
	s.connects++
	ids := []string{}
	for id := range s.sessions {
		ids = append(ids, id)
	}
	last := s.lastEvent
	s.mu.Unlock()
	if old != nil {
		_ = old.CloseNow()
	}
	s.notify()
	defer func() {
		s.mu.Lock()
		s.landCreated() // the store's work goes on after the socket
		if s.daemon == conn {
			s.daemon = nil
			for id, ch := range s.waiting {
				ch <- Result{RequestID: id, Status: "error", Error: "Daemon disconnected"}
				delete(s.waiting, id)
			}
		}
		s.mu.Unlock()
		s.notify()
	}()
	if s.opts.Store {
		if last == "" {
			last = "1970-01-01T00:00:00.000Z"
		}
		if err := send(ctx, conn, map[string]any{"type": "sync_request", "cachedSessionIds": ids, "lastEventTimestamp": last}); err != nil {
			return
		}
	}
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		s.receive(ctx, conn, data)
	}
}

func (s *Server) receive(ctx context.Context, conn *websocket.Conn, data []byte) {
	var f Frame
	if err := json.Unmarshal(data, &f); err != nil {
		return
	}
	s.mu.Lock()
	if f["type"] != "event" || burstOf(f) != s.burst {
		s.landCreated()
	}
	switch f["type"] {
	case "status":
		s.statuses = append(s.statuses, f)
	case "heartbeat":
		s.heartbeats = append(s.heartbeats, f)
		s.mu.Unlock()
		_ = send(ctx, conn, map[string]any{"type": "heartbeat_ack", "timestamp": time.Now().UTC().Format(time.RFC3339Nano)})
		s.notify()
		return
	case "event":
		s.events = append(s.events, f)
		s.cacheEvent(f)
	case "command_result":
		var r Result
		_ = json.Unmarshal(data, &r)
		if ch, ok := s.waiting[r.RequestID]; ok {
			ch <- r
			delete(s.waiting, r.RequestID)
		} else {
			s.unanswered = append(s.unanswered, f)
		}
	case "sync_response":
		s.syncs = append(s.syncs, f)
		s.cacheSync(data)
	default:
		s.unanswered = append(s.unanswered, f)
	}
	s.mu.Unlock()
	s.notify()
}

// cacheEvent is the orchestrator's cache of an event (under s.mu).
func (s *Server) cacheEvent(f Frame) {
	if ts, _ := f["timestamp"].(string); ts > s.lastEvent {
		s.lastEvent = ts
	}
	ev, _ := f["event"].(map[string]any)
	sid, _ := ev["sessionId"].(string)
	data, _ := ev["data"].(map[string]any)
	switch ev["type"] {
	case "mast.message.created":
		msg, _ := data["message"].(map[string]any)
		id, _ := msg["id"].(string)
		role, _ := msg["role"].(string)
		m := &Message{ID: id, Role: role, Parts: []any{}}
		if s.opts.Bursts {
			s.burst = burstOf(f)
			s.created = append(s.created, pendingMessage{session: sid, msg: m})
			return
		}
		s.addMessage(sid, m)
	case "mast.message.part.created", "mast.message.part.updated":
		id, _ := data["messageID"].(string)
		if m := s.message(sid, id); m != nil {
			m.Parts = []any{data["part"]}
		}
	case "mast.message.completed":
		id, _ := data["messageID"].(string)
		if m := s.message(sid, id); m != nil {
			m.Completed = true
		}
	default:
		if _, ok := s.sessions[sid]; !ok && sid != "" {
			s.sessions[sid] = nil
		}
	}
}

// burstOf names the read an event frame is taken to come in: its
// canonical event.
func burstOf(f Frame) string {
	ev, _ := f["event"].(map[string]any)
	data, _ := ev["data"].(map[string]any)
	return fmt.Sprint(ev["sessionId"], "@", data["seq"])
}

// landCreated adds the messages the last read created (under s.mu).
func (s *Server) landCreated() {
	for _, p := range s.created {
		s.addMessage(p.session, p.msg)
	}
	s.created, s.burst = nil, ""
}

// addMessage is the store's: a message of an id it has starts anew, its
// parts and completion gone (under s.mu).
func (s *Server) addMessage(sid string, m *Message) {
	if c := s.message(sid, m.ID); c != nil {
		*c = *m
		return
	}
	s.sessions[sid] = append(s.sessions[sid], m)
}

func (s *Server) message(sid, id string) *Message {
	for _, m := range s.sessions[sid] {
		if m.ID == id {
			return m
		}
	}
	return nil
}

func (s *Server) cacheSync(data []byte) {
	var resp struct {
		Sessions []struct {
			ID       string `json:"id"`
			Messages []struct {
				ID        string `json:"id"`
				Role      string `json:"role"`
				Parts     []any  `json:"parts"`
				Completed bool   `json:"completed"`
			} `json:"messages"`
		} `json:"sessions"`
	}
	if json.Unmarshal(data, &resp) != nil {
		return
	}
	for _, ss := range resp.Sessions {
		if _, ok := s.sessions[ss.ID]; !ok {
			s.sessions[ss.ID] = nil
		}
		for _, m := range ss.Messages {
			s.addMessage(ss.ID, &Message{ID: m.ID, Role: m.Role, Parts: m.Parts, Completed: m.Completed})
		}
	}
}

// Prompt is the phone's POST /sessions/{id}/prompt with one text part:
// the orchestrator caches the prompt as a user message of its own
// (completed, its parts the phone's), then sends send_prompt. (This fake
// caches whether or not it has a store, as it does events.)
func (s *Server) Prompt(ctx context.Context, sessionID, text string) (Result, error) {
	if text != "" {
		var b [3]byte
		_, _ = rand.Read(b[:])
		m := &Message{ID: fmt.Sprintf("user-%d-%s", time.Now().UnixMilli(), hex.EncodeToString(b[:])), Role: "user",
			Parts: []any{map[string]any{"type": "text", "text": text}}, Completed: true}
		s.mu.Lock()
		s.addMessage(sessionID, m)
		s.mu.Unlock()
		s.notify()
	}
	return s.Command(ctx, map[string]any{"type": "send_prompt", "sessionId": sessionID, "text": text})
}

// Command sends a command (its requestId added) and waits for its
// result, up to RequestTimeout or ctx.
func (s *Server) Command(ctx context.Context, cmd map[string]any) (Result, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	frame := map[string]any{"requestId": id}
	for k, v := range cmd {
		frame[k] = v
	}
	data, err := json.Marshal(frame)
	if err != nil {
		return Result{}, err
	}
	ch := make(chan Result, 1)
	s.mu.Lock()
	conn := s.daemon
	if conn == nil {
		s.mu.Unlock()
		return Result{}, errors.New("Daemon not connected")
	}
	s.waiting[id] = ch
	s.mu.Unlock()
	if err := conn.Write(ctx, websocket.MessageText, data); err != nil {
		s.forget(id)
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		s.forget(id)
		return Result{}, fmt.Errorf("Request %s timed out: %w", id, ctx.Err())
	}
}

func (s *Server) forget(id string) {
	s.mu.Lock()
	delete(s.waiting, id)
	s.mu.Unlock()
}

// SendRaw sends a frame as is to the daemon.
func (s *Server) SendRaw(ctx context.Context, data []byte) error {
	s.mu.Lock()
	conn := s.daemon
	s.mu.Unlock()
	if conn == nil {
		return errors.New("Daemon not connected")
	}
	return conn.Write(ctx, websocket.MessageText, data)
}

// Unanswered are the frames of no known type, and results nobody waited
// for (the answers to SendRaw).
func (v View) Unanswered() []Frame { return v.s.unanswered }

func send(ctx context.Context, conn *websocket.Conn, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, data)
}

// Ping pings the daemon and waits for its pong.
func (s *Server) Ping(ctx context.Context) error {
	s.mu.Lock()
	conn := s.daemon
	s.mu.Unlock()
	if conn == nil {
		return errors.New("Daemon not connected")
	}
	return conn.Ping(ctx)
}
