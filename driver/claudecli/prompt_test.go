package claudecli

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/tetherhq/tether/agent"
)

// A prompt's images are image blocks before its text, in base64; a
// native prompt carries its own and takes none besides.
func TestPromptInputImages(t *testing.T) {
	in, text, err := promptInput(agent.Prompt{Text: "look", Images: []agent.Image{{MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}})
	if err != nil || text != "look" {
		t.Fatalf("%q %v", text, err)
	}
	got, err := json.Marshal(in.Content)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="}},{"type":"text","text":"look"}]`
	if string(got) != want {
		t.Errorf("content %s\nwant    %s", got, want)
	}
	_, _, err = promptInput(agent.Prompt{Native: json.RawMessage(`"hi"`), Images: []agent.Image{{MediaType: "image/png", Data: []byte{1}}}})
	if !errors.Is(err, agent.ErrInvalidImage) {
		t.Errorf("native with images: %v", err)
	}
}
