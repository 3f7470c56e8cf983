package fakeopenai

import (
	"bytes"
	"io"
	"testing"
)

// Images are the data: URL images of the requests' user messages, from
// either API, each once.
func TestImages(t *testing.T) {
	srv, c := startServer(t, Options{})
	responses := respBody(false, nil, map[string]any{"type": "message", "role": "user", "content": []any{
		map[string]any{"type": "input_image", "image_url": "data:image/png;base64,iVBORw=="},
		map[string]any{"type": "input_text", "text": "SAY seen"},
	}})
	chat := chatBody(false, nil, map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/gif;base64,R0lGOA=="}},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw=="}},
		map[string]any{"type": "text", "text": "SAY seen"},
	}})
	for path, body := range map[string]any{"/v1/responses": responses, "/v1/chat/completions": chat} {
		resp := post(t.Context(), t, c, srv.URL()+path, body)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	got := srv.Images()
	if len(got) != 2 {
		t.Fatalf("images %+v", got)
	}
	for _, img := range got {
		want := map[string][]byte{"image/png": {0x89, 'P', 'N', 'G'}, "image/gif": []byte("GIF8")}[img.MediaType]
		if !bytes.Equal(img.Data, want) {
			t.Errorf("%s: %q, want %q", img.MediaType, img.Data, want)
		}
	}
}
