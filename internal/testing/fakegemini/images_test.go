package fakegemini

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Images are the inline images of the requests' user turns, each once.
func TestImages(t *testing.T) {
	srv, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer func() { tr.CloseIdleConnections(); _ = srv.Close() }()
	body := `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/webp","data":"UklGRg=="}},{"text":"SAY seen"}]}]}`
	for range 2 {
		resp, err := (&http.Client{Transport: tr}).Post(srv.URL()+"/v1beta/models/gemini-2.5-pro:generateContent", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	got := srv.Images()
	if len(got) != 1 || got[0].MediaType != "image/webp" || !bytes.Equal(got[0].Data, []byte("RIFF")) {
		t.Fatalf("images %+v", got)
	}
}
