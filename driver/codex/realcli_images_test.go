package codex_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakehttp"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
)

// A prompt's image reaches the model's request as an input image of the
// same bytes; an image no model takes is refused before a turn starts.
func TestRealCLIPromptImage(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	if !r.drv.Capabilities().Images {
		t.Fatal("codex takes images")
	}
	s, w := r.start(agentStart())
	bad := agent.Prompt{Text: "look", Images: []agent.Image{{MediaType: "image/svg+xml", Data: []byte("<svg/>")}}}
	if err := s.Prompt(ctxFor(t), bad); !errors.Is(err, agent.ErrInvalidImage) {
		t.Fatalf("an svg: %v", err)
	}
	png := fakehttp.OnePixelPNG()
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "SAY a pixel", Images: []agent.Image{{MediaType: "image/png", Data: png}}}); err != nil {
		t.Fatal(err)
	}
	end, _ := w.turnEnd(0)
	if end.Turn.Status != agent.TurnCompleted || end.Turn.Text != "a pixel" {
		t.Fatalf("turn.completed %+v\n%s", end.Turn, w.dump())
	}
	images := r.srv.Images()
	if len(images) != 1 || images[0].MediaType != "image/png" || !bytes.Equal(images[0].Data, png) {
		t.Fatalf("the model was sent images %+v, want the prompt's", images)
	}
}
