package fakeanthropic

import (
	"bytes"
	"io"
	"testing"
)

// Images are the base64 image blocks of the requests' user messages, each
// once however many requests repeat them.
func TestImages(t *testing.T) {
	srv, c := startServer(t, Options{})
	blocks := []any{
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
		map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": "https://example.com/a.png"}},
		map[string]any{"type": "text", "text": "SAY seen"},
	}
	for range 2 {
		resp := post(t.Context(), t, c, srv.URL()+"/v1/messages", msgBody(false, blocks))
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	got := srv.Images()
	if len(got) != 1 || got[0].MediaType != "image/png" || !bytes.Equal(got[0].Data, []byte{0x89, 'P', 'N', 'G'}) {
		t.Fatalf("images %+v", got)
	}
}
