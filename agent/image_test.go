package agent_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
)

func TestImageValidate(t *testing.T) {
	cases := []struct {
		name   string
		img    agent.Image
		reason string // in the error; empty for a valid image
	}{
		{"png", agent.Image{MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}, ""},
		{"webp at the bound", agent.Image{MediaType: "image/webp", Data: make([]byte, agent.MaxImageBytes)}, ""},
		{"svg", agent.Image{MediaType: "image/svg+xml", Data: []byte("<svg/>")}, "media type"},
		{"no media type", agent.Image{Data: []byte{1}}, "media type"},
		{"empty", agent.Image{MediaType: "image/jpeg"}, "no data"},
		{"too big", agent.Image{MediaType: "image/gif", Data: make([]byte, agent.MaxImageBytes+1)}, "over"},
	}
	for _, c := range cases {
		err := c.img.Validate()
		if c.reason == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var bad *agent.InvalidImageError
		if !errors.As(err, &bad) || !errors.Is(err, agent.ErrInvalidImage) || !strings.Contains(bad.Reason, c.reason) {
			t.Errorf("%s: %v, want an *InvalidImageError saying %q", c.name, err, c.reason)
		}
	}
}

func TestPromptValidateImagesNamesTheImage(t *testing.T) {
	p := agent.Prompt{Text: "look", Images: []agent.Image{{MediaType: "image/png", Data: []byte{1}}, {MediaType: "text/plain", Data: []byte{1}}}}
	var bad *agent.InvalidImageError
	if err := p.ValidateImages(); !errors.As(err, &bad) || bad.Index != 1 {
		t.Fatalf("%v, want image 1 refused", err)
	}
}

func TestCheckImages(t *testing.T) {
	p := agent.Prompt{Text: "look", Images: []agent.Image{{MediaType: "image/png", Data: []byte{1}}}}
	var unsupported *agent.UnsupportedError
	if err := agent.CheckImages("x", agent.Capabilities{}, p); !errors.As(err, &unsupported) || unsupported.Agent != "x" {
		t.Errorf("no images capability: %v", err)
	}
	if err := agent.CheckImages("x", agent.Capabilities{Images: true}, p); err != nil {
		t.Errorf("images capability: %v", err)
	}
	if err := agent.CheckImages("x", agent.Capabilities{}, agent.Prompt{Text: "only text"}); err != nil {
		t.Errorf("no images: %v", err)
	}
}

// In JSON an image's data is base64, as the sessions API carries it.
func TestPromptImagesJSON(t *testing.T) {
	data := []byte{0x89, 'P', 'N', 'G', 0, 0xff}
	raw, err := json.Marshal(agent.Prompt{Text: "look", Images: []agent.Image{{MediaType: "image/png", Data: data}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"images":[{"media_type":"image/png","data":"iVBORwD/"}]`; !strings.Contains(string(raw), want) {
		t.Errorf("%s, want %s", raw, want)
	}
	var back agent.Prompt
	if err := json.Unmarshal(raw, &back); err != nil || len(back.Images) != 1 || !bytes.Equal(back.Images[0].Data, data) {
		t.Errorf("back: %+v %v", back, err)
	}
	if raw, _ := json.Marshal(agent.Prompt{Text: "plain"}); strings.Contains(string(raw), "images") {
		t.Errorf("a prompt without images: %s", raw)
	}
}
