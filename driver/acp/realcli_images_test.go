package acp_test

import (
	"bytes"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/acp"
	"github.com/tetherhq/tether/driver/acp/opencodeacp"
	"github.com/tetherhq/tether/internal/testing/fakegemini"
	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// promptImage sends a prompt with one image through an agent that
// declared promptCapabilities.image and checks the model was sent its
// bytes.
func promptImage(t *testing.T, d *acp.Driver, home string, images func() []fakehttp.Image) {
	t.Helper()
	s, err := d.Start(t.Context(), agent.StartRequest{Workspace: t.TempDir(), Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !d.Capabilities().Images {
		t.Fatalf("the agent's initialize declared no images: %+v", d.Capabilities())
	}
	ch := events(t, s)
	png := fakehttp.OnePixelPNG()
	if err := s.Prompt(t.Context(), agent.Prompt{Text: "SAY a pixel", Images: []agent.Image{{MediaType: "image/png", Data: png}}}); err != nil {
		t.Fatal(err)
	}
	evs := until(t, ch, turnDone)
	if end := evs[len(evs)-1]; end.Turn.Status != agent.TurnCompleted || text(evs) != "a pixel" {
		t.Fatalf("turn %+v, text %q; %s", end.Turn, text(evs), kinds(evs))
	}
	got := images()
	if len(got) != 1 || got[0].MediaType != "image/png" || !bytes.Equal(got[0].Data, png) {
		t.Fatalf("the model was sent images %+v, want the prompt's", got)
	}
}

// Gemini CLI takes a prompt's image block and sends it to the model as
// inline data.
func TestRealCLIGeminiImage(t *testing.T) {
	d, fake := geminiDriver(t, fakegemini.Options{})
	promptImage(t, d, t.TempDir(), fake.Images)
}

// `opencode acp` takes a prompt's image block and sends it to the model
// (the test's model declares image input).
func TestRealCLIOpenCodeACPImage(t *testing.T) {
	cfg, home, fake := openCodeEnv(t)
	d, err := acp.New(cfg, opencodeacp.Spec())
	if err != nil {
		t.Fatal(err)
	}
	promptImage(t, d, home, fake.Images)
}
