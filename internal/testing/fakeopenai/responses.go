package fakeopenai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// Wire shapes of the Responses API (what Codex reads).
type (
	response struct {
		ID        string         `json:"id"`
		Object    string         `json:"object"`
		CreatedAt int64          `json:"created_at"`
		Model     string         `json:"model"`
		Status    string         `json:"status"`
		Output    []any          `json:"output"`
		Usage     *responseUsage `json:"usage"`
	}
	responseUsage struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int `json:"total_tokens"`
	}
	outputText struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
	}
	messageItem struct {
		ID      string       `json:"id"`
		Type    string       `json:"type"`
		Status  string       `json:"status"`
		Role    string       `json:"role"`
		Content []outputText `json:"content"`
	}
	functionCallItem struct {
		ID     string `json:"id"`
		Type   string `json:"type"`
		Status string `json:"status"`
		// Namespace is the namespace tool the function is in (Codex
		// offers an MCP server's tools in one, mcp__<server>).
		Namespace string `json:"namespace,omitempty"`
		Name      string `json:"name"`
		CallID    string `json:"call_id"`
		Arguments string `json:"arguments"`
	}
)

// Event payloads, without the "type" and "sequence_number" every event
// carries (responsesStream.emit adds those).
type (
	responseEvent struct {
		Response response `json:"response"`
	}
	itemEvent struct {
		OutputIndex int `json:"output_index"`
		Item        any `json:"item"`
	}
	partEvent struct {
		ItemID       string     `json:"item_id"`
		OutputIndex  int        `json:"output_index"`
		ContentIndex int        `json:"content_index"`
		Part         outputText `json:"part"`
	}
	textDeltaEvent struct {
		ItemID       string `json:"item_id"`
		OutputIndex  int    `json:"output_index"`
		ContentIndex int    `json:"content_index"`
		Delta        string `json:"delta"`
		Logprobs     []any  `json:"logprobs"`
	}
	textDoneEvent struct {
		ItemID       string `json:"item_id"`
		OutputIndex  int    `json:"output_index"`
		ContentIndex int    `json:"content_index"`
		Text         string `json:"text"`
		Logprobs     []any  `json:"logprobs"`
	}
	argsDeltaEvent struct {
		ItemID      string `json:"item_id"`
		OutputIndex int    `json:"output_index"`
		Delta       string `json:"delta"`
	}
	argsDoneEvent struct {
		ItemID      string `json:"item_id"`
		OutputIndex int    `json:"output_index"`
		Arguments   string `json:"arguments"`
	}
)

// responseReply is one reply built for a Responses request.
type responseReply struct {
	res  response
	rep  reply
	call *toolCall
	// patch, when set, is the input of an apply_patch call (USE_PATCH).
	patch string
	// itemID and callID name the output item and, for calls, the call.
	itemID, callID string
	outputTokens   int
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	body := bodyOf(r)
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("fake: body is not a Responses request: %v", err))
		return
	}
	t := req.turn()
	rep := decide(t, s.opts)
	if rep.status != http.StatusOK {
		writeStatusError(w, rep.status)
		return
	}
	n := strconv.FormatInt(s.next(), 10)
	rr := responseReply{
		res: response{
			ID: "resp_fake_" + n, Object: "response", CreatedAt: time.Now().Unix(),
			Model: modelOr(req.Model), Status: "in_progress", Output: []any{},
		},
		rep:    rep,
		itemID: "msg_fake_" + n,
	}
	rr.outputTokens = tokens(len(rep.text))
	if rep.command != "" {
		c := codexShellCall(t.tools, rep.command)
		rr.call, rr.itemID, rr.callID = &c, "fc_fake_"+n, "call_fake_"+n
		rr.outputTokens = tokens(len(c.args))
	}
	if rep.call != nil {
		rr.call, rr.itemID, rr.callID = rep.call, "fc_fake_"+n, "call_fake_"+n
		rr.outputTokens = tokens(len(rep.call.args))
	}
	if patch, ok := patchOf(t); ok {
		rr.patch, rr.itemID, rr.callID = patch, "ctc_fake_"+n, "call_fake_"+n
		rr.outputTokens = tokens(len(patch))
	}
	w.Header().Set("X-Request-Id", "req_fake_"+n)
	usage := rr.usage(len(body))
	if !req.Stream {
		if err := fakehttp.Pause(r.Context(), rep.slowWait()); err != nil {
			return
		}
		res := rr.res
		res.Status, res.Output, res.Usage = "completed", []any{rr.item(true)}, &usage
		_ = fakehttp.WriteJSON(w, http.StatusOK, res)
		return
	}
	if err := rr.stream(r.Context(), startSSE(w), usage); err != nil {
		s.opts.Logger.Debug("fakeopenai stream cut short", "id", rr.res.ID, "err", err)
		// Returning would let net/http end the chunked body cleanly, and a
		// stream cut off by Close must not look complete to the client.
		panic(http.ErrAbortHandler)
	}
}

func (rr *responseReply) usage(bodyBytes int) responseUsage {
	u := responseUsage{InputTokens: tokens(bodyBytes), OutputTokens: rr.outputTokens}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	return u
}

// item is the reply's one output item, complete or as first announced.
func (rr *responseReply) item(done bool) any {
	status := "in_progress"
	if done {
		status = "completed"
	}
	if rr.patch != "" {
		return rr.patchItem(done)
	}
	if rr.call != nil {
		fc := functionCallItem{ID: rr.itemID, Type: "function_call", Status: status, Name: rr.call.name, CallID: rr.callID}
		if ns, name, ok := strings.Cut(rr.call.name, "/"); ok {
			fc.Namespace, fc.Name = ns, name
		}
		if done {
			fc.Arguments = string(rr.call.args)
		}
		return fc
	}
	m := messageItem{ID: rr.itemID, Type: "message", Status: status, Role: "assistant", Content: []outputText{}}
	if done {
		m.Content = []outputText{{Type: "output_text", Text: rr.rep.text, Annotations: []any{}}}
	}
	return m
}

// responsesStream numbers the events of one stream.
type responsesStream struct {
	sse sseWriter
	seq int
}

// emit sends payload, a struct encoding as an object, as event typ with the
// "type" and "sequence_number" fields first.
func (st *responsesStream) emit(typ string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode %s: %w", typ, err)
	}
	head := fmt.Sprintf(`{"type":%s,"sequence_number":%d`, mustJSON(typ), st.seq)
	st.seq++
	if len(b) > 2 {
		head += ","
	}
	return st.sse.send(typ, append([]byte(head), b[1:]...))
}

// stream sends the reply as the Responses API streams it: created,
// in_progress, the item's events, completed with usage.
func (rr *responseReply) stream(ctx context.Context, sse sseWriter, usage responseUsage) error {
	st := &responsesStream{sse: sse}
	if err := st.emit("response.created", responseEvent{rr.res}); err != nil {
		return err
	}
	if err := st.emit("response.in_progress", responseEvent{rr.res}); err != nil {
		return err
	}
	if err := st.emit("response.output_item.added", itemEvent{0, rr.item(false)}); err != nil {
		return err
	}
	var err error
	switch {
	case rr.patch != "":
		err = rr.streamPatch(st)
	case rr.call != nil:
		err = rr.streamCall(st)
	default:
		err = rr.streamText(ctx, st)
	}
	if err != nil {
		return err
	}
	done := rr.item(true)
	if err := st.emit("response.output_item.done", itemEvent{0, done}); err != nil {
		return err
	}
	res := rr.res
	res.Status, res.Output, res.Usage = "completed", []any{done}, &usage
	return st.emit("response.completed", responseEvent{res})
}

func (rr *responseReply) streamText(ctx context.Context, st *responsesStream) error {
	part := outputText{Type: "output_text", Annotations: []any{}}
	if err := st.emit("response.content_part.added", partEvent{rr.itemID, 0, 0, part}); err != nil {
		return err
	}
	for i, p := range rr.rep.textPieces() {
		if i > 0 {
			if err := fakehttp.Pause(ctx, rr.rep.delay); err != nil {
				return err
			}
		}
		if err := st.emit("response.output_text.delta", textDeltaEvent{rr.itemID, 0, 0, p, []any{}}); err != nil {
			return err
		}
	}
	if err := st.emit("response.output_text.done", textDoneEvent{rr.itemID, 0, 0, rr.rep.text, []any{}}); err != nil {
		return err
	}
	part.Text = rr.rep.text
	return st.emit("response.content_part.done", partEvent{rr.itemID, 0, 0, part})
}

func (rr *responseReply) streamCall(st *responsesStream) error {
	for _, p := range argPiecesOf(rr.call.args) {
		if err := st.emit("response.function_call_arguments.delta", argsDeltaEvent{rr.itemID, 0, p}); err != nil {
			return err
		}
	}
	return st.emit("response.function_call_arguments.done", argsDoneEvent{rr.itemID, 0, string(rr.call.args)})
}
