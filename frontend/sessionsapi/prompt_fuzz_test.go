package sessionsapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"github.com/tetherhq/tether/agent"
)

// Any prompt body that decodes is a prompt whose images are valid, with
// the bytes its base64 says, or an *agent.InvalidImageError: never a
// panic, never an image let through that the agents could not send.
func FuzzPromptBody(f *testing.F) {
	for _, s := range []string{
		`{"text":"hi"}`,
		`{"text":"look","images":[{"media_type":"image/png","data":"iVBORw0K"}]}`,
		`{"text":"look","images":[{"media_type":"image/jpeg","data":"not base64"}]}`,
		`{"text":"look","images":[{"media_type":"image/svg+xml","data":"PHN2Zy8+"}]}`,
		`{"text":"look","images":[{"media_type":"image/gif","data":""}]}`,
		`{"text":"look","images":[{"media_type":"image/webp","data":"AA=="},{"media_type":"","data":"AA"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var body promptBody
		if json.Unmarshal(raw, &body) != nil {
			return
		}
		p, err := body.prompt()
		if err != nil {
			var bad *agent.InvalidImageError
			if !errors.As(err, &bad) || bad.Index < 0 || bad.Index >= len(body.Images) {
				t.Fatalf("%s: %v", raw, err)
			}
			return
		}
		if len(p.Images) != len(body.Images) || p.Text != body.Text {
			t.Fatalf("%s: %+v", raw, p)
		}
		for i, img := range p.Images {
			want, _ := base64.StdEncoding.DecodeString(body.Images[i].Data)
			if img.Validate() != nil || !bytes.Equal(img.Data, want) || img.MediaType != body.Images[i].MediaType {
				t.Fatalf("%s: image %d %+v", raw, i, img)
			}
		}
	})
}
