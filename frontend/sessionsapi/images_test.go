package sessionsapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/frontend/sessionsapi"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/sessions"
)

// textOnly is the mock as an agent that takes no images, as a driver
// without Capabilities.Images refuses them.
type textOnly struct{ *mock.Driver }

func (d textOnly) Capabilities() agent.Capabilities {
	c := d.Driver.Capabilities()
	c.Images = false
	return c
}

func (d textOnly) Start(ctx context.Context, req agent.StartRequest) (agent.Session, error) {
	s, err := d.Driver.Start(ctx, req)
	return textOnlySession{s, d.Capabilities()}, err
}

type textOnlySession struct {
	agent.Session
	caps agent.Capabilities
}

func (s textOnlySession) Prompt(ctx context.Context, p agent.Prompt) error {
	if err := agent.CheckImages("text-only", s.caps, p); err != nil {
		return err
	}
	return s.Session.Prompt(ctx, p)
}

// imagePrompt is a prompt body with one image of data.
func imagePrompt(text, mediaType, data string) string {
	body, _ := json.Marshal(map[string]any{"text": text, "images": []map[string]string{{"media_type": mediaType, "data": data}}})
	return string(body)
}

// A prompt's images reach the agent (the mock's reply counts them);
// one the models would not take is a 400 invalid_image that says why,
// and an agent that takes none answers 501 unsupported.
func TestSessionsAPIPromptImages(t *testing.T) {
	base := runnertest.SessionsAPI(t, map[string]agent.Driver{"mock": mock.New(mock.Config{}), "text-only": textOnly{mock.New(mock.Config{})}})
	var agents struct {
		Agents map[string]agent.Capabilities
	}
	call(t, "GET", base+"/v1/agents", "", &agents)
	if !agents.Agents["mock"].Images || agents.Agents["text-only"].Images {
		t.Errorf("capabilities %+v", agents.Agents)
	}

	var info sessions.Info
	if code := call(t, "POST", base+"/v1/sessions", `{"agent":"mock","workspace_id":"img"}`, &info); code != 201 {
		t.Fatalf("create: %d", code)
	}
	png := []byte("\x89PNG\r\n\x1a\n not really a picture")
	big := base64.StdEncoding.EncodeToString(make([]byte, agent.MaxImageBytes+1))
	huge := strings.Repeat("A", sessionsapi.MaxPromptBody)
	for _, tc := range []struct {
		name, body string
		status     int
		code, says string
	}{
		{"an svg", imagePrompt("look", "image/svg+xml", base64.StdEncoding.EncodeToString([]byte("<svg/>"))), 400, "invalid_image", "media type"},
		{"not base64", imagePrompt("look", "image/png", "not base64!"), 400, "invalid_image", "base64"},
		{"no data", imagePrompt("look", "image/png", ""), 400, "invalid_image", "no data"},
		{"over the bound", imagePrompt("look", "image/png", big), 400, "invalid_image", "over"},
		{"over the body's bound", imagePrompt("look", "image/png", huge), 413, "body_too_large", "bytes"},
		{"no text", imagePrompt("", "image/png", base64.StdEncoding.EncodeToString(png)), 400, "invalid_request", "text"},
		{"a field too many", `{"text":"look","images":[{"media_type":"image/png","data":"AA==","detail":"high"}]}`, 400, "invalid_request", "detail"},
	} {
		var out struct {
			Error struct{ Code, Message string }
		}
		if code := call(t, "POST", base+"/v1/sessions/"+info.ID+"/prompt", tc.body, &out); code != tc.status ||
			out.Error.Code != tc.code || !strings.Contains(out.Error.Message, tc.says) {
			t.Errorf("%s: %d %+v, want %d %s saying %q", tc.name, code, out.Error, tc.status, tc.code, tc.says)
		}
	}

	events := stream(t, base+"/v1/sessions/"+info.ID+"/events", "")
	if code := call(t, "POST", base+"/v1/sessions/"+info.ID+"/prompt", imagePrompt("look", "image/png", base64.StdEncoding.EncodeToString(png)), nil); code != 202 {
		t.Fatalf("prompt with an image: %d", code)
	}
	var seen []sseEvent
	end := until(t, events, agent.KindTurnCompleted, &seen)
	if want := "You sent 1 image (image/png 29 bytes)."; !strings.Contains(end.event.Turn.Text, want) {
		t.Errorf("reply %q, want it to say %q", end.event.Turn.Text, want)
	}

	var other sessions.Info
	call(t, "POST", base+"/v1/sessions", `{"agent":"text-only","workspace_id":"text"}`, &other)
	var out struct {
		Error struct{ Code, Message string }
	}
	if code := call(t, "POST", base+"/v1/sessions/"+other.ID+"/prompt", imagePrompt("look", "image/png", base64.StdEncoding.EncodeToString(png)), &out); code != 501 ||
		out.Error.Code != "unsupported" || !strings.Contains(out.Error.Message, "images") {
		t.Errorf("an agent without images: %d %+v", code, out.Error)
	}
}

// A new session's first prompt carries images as any prompt does; one
// the session could not take is refused before anything starts.
func TestSessionsAPICreateWithImages(t *testing.T) {
	base := runnertest.SessionsAPI(t, map[string]agent.Driver{"mock": mock.New(mock.Config{}), "text-only": textOnly{mock.New(mock.Config{})}})
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n not really a picture"))
	images := `"images":[{"media_type":"image/png","data":"` + png + `"}]`
	for _, tc := range []struct {
		name, body string
		status     int
		code, says string
	}{
		{"images without a prompt", `{"agent":"mock","workspace_id":"a",` + images + `}`, 400, "invalid_request", "prompt"},
		{"a bad image", `{"agent":"mock","workspace_id":"b","prompt":"look","images":[{"media_type":"image/png","data":"not base64!"}]}`, 400, "invalid_image", "base64"},
		{"an agent without images", `{"agent":"text-only","workspace_id":"c","prompt":"look",` + images + `}`, 501, "unsupported", "images"},
	} {
		var out struct {
			Error struct{ Code, Message string }
		}
		if code := call(t, "POST", base+"/v1/sessions", tc.body, &out); code != tc.status ||
			out.Error.Code != tc.code || !strings.Contains(out.Error.Message, tc.says) {
			t.Errorf("%s: %d %+v, want %d %s saying %q", tc.name, code, out.Error, tc.status, tc.code, tc.says)
		}
	}
	var list struct{ Sessions []sessions.Info }
	if call(t, "GET", base+"/v1/sessions", "", &list); len(list.Sessions) != 0 {
		t.Fatalf("refused creates started sessions: %+v", list.Sessions)
	}

	var info sessions.Info
	if code := call(t, "POST", base+"/v1/sessions", `{"agent":"mock","workspace_id":"img","prompt":"look",`+images+`}`, &info); code != 201 {
		t.Fatalf("create with an image: %d", code)
	}
	var seen []sseEvent
	end := until(t, stream(t, base+"/v1/sessions/"+info.ID+"/events", ""), agent.KindTurnCompleted, &seen)
	if want := "You sent 1 image (image/png 29 bytes)."; !strings.Contains(end.event.Turn.Text, want) {
		t.Errorf("the first turn's reply %q, want it to say %q", end.event.Turn.Text, want)
	}
}
