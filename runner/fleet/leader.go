package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
)

// errNoMessage: the stream holds no message on the subject.
var errNoMessage = errors.New("fleet: no message on the subject")

// storedMsg is a message as the stream's leader answers a get.
type storedMsg struct {
	pos    uint64
	header nats.Header
	data   []byte
}

// lastStored reads the last message on subject from the stream's leader.
// A direct get may be answered by a replica that is behind (one that has
// just come back); what decides where a session stands must not be.
func (f *Fleet) lastStored(ctx context.Context, subject string) (storedMsg, error) {
	return f.leaderGet(ctx, map[string]any{"last_by_subj": subject})
}

// nextStored reads the first message on subject after stream position
// pos from the stream's leader.
func (f *Fleet) nextStored(ctx context.Context, subject string, pos uint64) (storedMsg, error) {
	return f.leaderGet(ctx, map[string]any{"seq": pos + 1, "next_by_subj": subject})
}

func (f *Fleet) leaderGet(ctx context.Context, q map[string]any) (storedMsg, error) {
	req, _ := json.Marshal(q)
	m, err := f.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+eventStream, req)
	if err != nil {
		return storedMsg{}, err
	}
	var resp struct {
		Message *struct {
			Seq  uint64 `json:"seq"`
			Hdrs []byte `json:"hdrs"`
			Data []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return storedMsg{}, fmt.Errorf("fleet: the stream's answer to a get: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.Code == 404:
		return storedMsg{}, errNoMessage
	case resp.Error != nil:
		return storedMsg{}, fmt.Errorf("fleet: get %s: %d %s", req, resp.Error.Code, resp.Error.Description)
	case resp.Message == nil:
		return storedMsg{}, fmt.Errorf("fleet: get %s: an answer without a message", req)
	}
	out := storedMsg{pos: resp.Message.Seq, data: resp.Message.Data, header: nats.Header{}}
	if len(resp.Message.Hdrs) > 0 {
		if out.header, err = nats.DecodeHeadersMsg(resp.Message.Hdrs); err != nil {
			return storedMsg{}, fmt.Errorf("fleet: the headers of message %d: %w", out.pos, err)
		}
	}
	return out, nil
}

// seqOf is an event message's session seq.
func seqOf(h nats.Header) (uint64, error) {
	return strconv.ParseUint(h.Get(seqHeader), 10, 64)
}
