package acp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

const onePixelPNG = fakehttp.OnePixelPNGBase64

func TestPromptOf(t *testing.T) {
	text, image := acpsdk.TextBlock("look"), acpsdk.ImageBlock(onePixelPNG, "image/png")
	for _, tc := range []struct {
		name   string
		images bool // the agent takes images
		blocks []acpsdk.ContentBlock
		says   string // in the -32602 error; "" for a prompt
	}{
		{"text and an image", true, []acpsdk.ContentBlock{text, image}, ""},
		{"an image to an agent that takes none", false, []acpsdk.ContentBlock{text, image}, "takes no images"},
		{"not base64", true, []acpsdk.ContentBlock{text, acpsdk.ImageBlock("%%%", "image/png")}, "not base64"},
		{"a bmp", true, []acpsdk.ContentBlock{text, acpsdk.ImageBlock(onePixelPNG, "image/bmp")}, "media type"},
		{"an image only", true, []acpsdk.ContentBlock{image}, "no text"},
		{"audio", true, []acpsdk.ContentBlock{text, acpsdk.AudioBlock("AAAA", "audio/wav")}, "takes text"},
	} {
		f := newFront(t.Context(), Config{Agent: "x", Capabilities: agent.Capabilities{Images: tc.images}})
		p, err := f.promptOf(tc.blocks)
		if tc.says == "" {
			if err != nil || p.Text != "look" || len(p.Images) != 1 || p.Images[0].MediaType != "image/png" || len(p.Images[0].Data) != 70 {
				t.Errorf("%s: %+v %v", tc.name, p, err)
			}
			continue
		}
		var re *acpsdk.RequestError
		if !errors.As(err, &re) || re.Code != -32602 || !strings.Contains(re.Error()+string(mustJSON(re.Data)), tc.says) {
			t.Errorf("%s: %v, want -32602 saying %q", tc.name, err, tc.says)
		}
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// Any prompt's blocks are a prompt with text and valid images (only for
// an agent that takes them), or invalid params: never a panic.
func FuzzPromptOf(f *testing.F) {
	f.Add([]byte(`[{"type":"text","text":"hi"}]`), true)
	f.Add([]byte(`[{"type":"text","text":"hi"},{"type":"image","mimeType":"image/png","data":"`+onePixelPNG+`"}]`), true)
	f.Add([]byte(`[{"type":"text","text":"hi"},{"type":"image","mimeType":"image/png","data":"`+onePixelPNG+`"}]`), false)
	f.Add([]byte(`[{"type":"image","mimeType":"image/svg+xml","data":"PHN2Zy8+"}]`), true)
	f.Add([]byte(`[{"type":"resource_link","name":"a","uri":"file:///a"},{"type":"image","mimeType":"image/gif","data":""}]`), true)
	f.Fuzz(func(t *testing.T, raw []byte, images bool) {
		var blocks []acpsdk.ContentBlock
		if json.Unmarshal(raw, &blocks) != nil {
			return
		}
		front := newFront(t.Context(), Config{Agent: "x", Capabilities: agent.Capabilities{Images: images}})
		p, err := front.promptOf(blocks)
		if err != nil {
			var re *acpsdk.RequestError
			if !errors.As(err, &re) || re.Code != -32602 {
				t.Fatalf("%s: %v", raw, err)
			}
			return
		}
		if p.Text == "" || (!images && len(p.Images) > 0) {
			t.Fatalf("%s: %+v", raw, p)
		}
		if err := p.ValidateImages(); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
	})
}
