package e2e

import (
	"bytes"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// hasImage: the model was sent the image, byte for byte.
func hasImage(images []fakehttp.Image, mediaType string, data []byte) bool {
	for _, img := range images {
		if img.MediaType == mediaType && bytes.Equal(img.Data, data) {
			return true
		}
	}
	return false
}

// A prompt's image goes through Claude Code, locally and on a sandboxed
// runner, to the model's request as an image block of the same bytes.
func TestRealCLICanonicalClaudeImage(t *testing.T) {
	timed(t)
	for name, tg := range map[string]func(t *testing.T) target{
		"Local":         localTarget,
		"RunnerSandbox": func(t *testing.T) target { return runnerTarget(startRunner(t, true)) },
	} {
		t.Run(name, func(t *testing.T) {
			tgt := tg(t)
			opts, dir := tgt.opts(t)
			d := &claudecli.Canonical{Base: opts}
			if !d.Capabilities().Images {
				t.Fatal("Claude Code takes images")
			}
			s := startWatched(t, d, agent.StartRequest{Workspace: dir})
			png := fakehttp.OnePixelPNG()
			if err := s.session.Prompt(testCtx(t), agent.Prompt{Text: "SAY a pixel", Images: []agent.Image{{MediaType: "image/png", Data: png}}}); err != nil {
				t.Fatal(err)
			}
			if got := s.until(t, agent.KindTurnCompleted); got.Turn.Status != agent.TurnCompleted || got.Turn.Text != "a pixel" {
				t.Fatalf("turn ended %+v", got.Turn)
			}
			if images := tgt.fake.Images(); !hasImage(images, "image/png", png) {
				t.Fatalf("the model was sent images %+v, not the prompt's", images)
			}
		})
	}
}
