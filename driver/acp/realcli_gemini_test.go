package acp_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/acp"
	"github.com/tetherhq/tether/driver/acp/gemini"
	"github.com/tetherhq/tether/internal/testing/fakegemini"
)

// geminiDriver is the gemini kind's driver against a fresh fake API.
func geminiDriver(t *testing.T, opts fakegemini.Options) (*acp.Driver, *fakegemini.Server) {
	t.Helper()
	cli := fakegemini.RequireCLI(t)
	fake, err := fakegemini.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	d, err := acp.New(driver.Config{CLIPath: cli, Env: fakegemini.Env(t.TempDir(), fake.URL())}, gemini.Spec())
	if err != nil {
		t.Fatal(err)
	}
	return d, fake
}

// The journey through the real Gemini CLI: a text reply, a shell command
// allowed and one denied, a file written once allowed (and in the diff),
// the messages, and an interrupted slow turn. (Resuming is
// TestRealCLIGeminiResume.)
func TestRealCLIGeminiJourney(t *testing.T) {
	d, fake := geminiDriver(t, fakegemini.Options{})
	ws, home := t.TempDir(), t.TempDir()
	s, err := d.Start(t.Context(), agent.StartRequest{Workspace: ws, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ch := events(t, s)
	first := until(t, ch, func(e agent.Event) bool { return e.Kind == agent.KindSessionStarted })
	if info := first[0].Session; info.Agent != "gemini" || info.NativeID == "" || info.NativeID != s.NativeID() {
		t.Fatalf("session.started %+v, native id %q", info, s.NativeID())
	}

	// text
	prompt(t, s, "SAY hello from gemini")
	evs := until(t, ch, turnDone)
	if got := text(evs); got != "hello from gemini" || evs[len(evs)-1].Turn.Status != agent.TurnCompleted || evs[len(evs)-1].Turn.Text != got {
		t.Fatalf("text %q, events %s", got, kinds(evs))
	}
	if u := evs[len(evs)-1].Usage; u == nil || u.InputTokens == 0 {
		t.Errorf("turn usage %+v", u)
	}

	// approved shell command
	prompt(t, s, "USE_SHELL touch made-by-gemini")
	evs = until(t, ch, isApproval)
	ap := evs[len(evs)-1].Approval
	if ap.Tool != "shell" || !strings.Contains(ap.Title, "touch made-by-gemini") || ap.ItemID == "" {
		t.Fatalf("approval %+v", ap)
	}
	resolve(t, s, ap.ID, agent.Allow)
	evs = until(t, ch, turnDone)
	cmds := completed(evs, agent.ItemCommand)
	if len(cmds) != 1 || cmds[0].Status != agent.ItemDone || cmds[0].ID != ap.ItemID {
		t.Fatalf("allowed command items %+v; %s", cmds, kinds(evs))
	}
	if _, err := os.Stat(filepath.Join(ws, "made-by-gemini")); err != nil {
		t.Fatalf("the allowed command did not run: %v", err)
	}
	if err := s.Resolve(t.Context(), agent.Resolution{ApprovalID: ap.ID, Decision: agent.Deny}); !errors.Is(err, agent.ErrAlreadyResolved) {
		t.Errorf("second resolution: %v", err)
	}

	// denied shell command
	prompt(t, s, "USE_SHELL touch refused")
	evs = until(t, ch, isApproval)
	resolve(t, s, evs[len(evs)-1].Approval.ID, agent.Deny)
	evs = until(t, ch, turnDone)
	cmds = completed(evs, agent.ItemCommand)
	if len(cmds) != 1 || cmds[0].Status != agent.ItemDeclined {
		t.Fatalf("denied command items %+v; %s", cmds, kinds(evs))
	}
	if _, err := os.Stat(filepath.Join(ws, "refused")); err == nil {
		t.Fatal("the denied command ran")
	}

	// approved file write, with its diff
	prompt(t, s, "USE_WRITE note.txt written by gemini")
	evs = until(t, ch, isApproval)
	ap = evs[len(evs)-1].Approval
	if ap.Tool != "edit" || !strings.Contains(ap.Title, "note.txt") {
		t.Fatalf("write approval %+v", ap)
	}
	resolve(t, s, ap.ID, agent.Allow)
	evs = until(t, ch, turnDone)
	edits := completed(evs, agent.ItemFileChange)
	if len(edits) != 1 || edits[0].Status != agent.ItemDone || len(edits[0].Changes) != 1 {
		t.Fatalf("file change items %+v; %s", edits, kinds(evs))
	}
	if b, err := os.ReadFile(filepath.Join(ws, "note.txt")); err != nil || string(b) != "written by gemini\n" {
		t.Fatalf("note.txt %q %v", b, err)
	}
	diff, err := s.Diff(t.Context())
	if err != nil || len(diff) != 1 || diff[0].Kind != agent.ChangeAdd || !strings.Contains(diff[0].Diff, "+written by gemini") {
		t.Fatalf("diff %+v %v", diff, err)
	}

	// modes: one that approves everything itself is withheld; in
	// autoEdit a write runs without asking
	c := s.(agent.Configurable)
	if modes := d.Capabilities().Modes; len(modes) == 0 || d.Capabilities().HasMode("yolo") || !d.Capabilities().HasMode("autoEdit") {
		t.Fatalf("modes %+v", modes)
	}
	if err := c.Configure(t.Context(), agent.Settings{Mode: "yolo"}); !errors.Is(err, agent.ErrInvalidSettings) {
		t.Fatalf("a withheld mode: %v", err)
	}
	if err := c.Configure(t.Context(), agent.Settings{Mode: "autoEdit"}); err != nil {
		t.Fatal(err)
	}
	prompt(t, s, "USE_WRITE auto.txt written without asking")
	evs = until(t, ch, func(e agent.Event) bool { return turnDone(e) || isApproval(e) })
	if last := evs[len(evs)-1]; last.Kind != agent.KindTurnCompleted {
		t.Fatalf("autoEdit asked: %+v", last.Approval)
	}
	if _, err := os.Stat(filepath.Join(ws, "auto.txt")); err != nil {
		t.Fatalf("the write in autoEdit: %v", err)
	}
	if err := c.Configure(t.Context(), agent.Settings{Mode: "default"}); err != nil {
		t.Fatal(err)
	}

	// a model switched to is the one the next turn asks for
	const model = "gemini-2.5-pro"
	if err := c.Configure(t.Context(), agent.Settings{Model: model}); err != nil {
		t.Fatal(err)
	}
	before := len(fake.Requests())
	prompt(t, s, "SAY switched")
	until(t, ch, turnDone)
	var paths []string
	for _, r := range fake.Requests()[before:] {
		paths = append(paths, r.Path)
	}
	if !slices.ContainsFunc(paths, func(p string) bool { return strings.Contains(p, "/models/"+model+":") }) {
		t.Fatalf("the turn after set_model asked %q", paths)
	}

	// messages
	msgs, err := s.Messages(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, it := range msgs {
		if it.Type == agent.ItemMessage {
			texts = append(texts, it.Text)
		}
	}
	if len(texts) < 5 || texts[0] != "hello from gemini" {
		t.Fatalf("messages %q", texts)
	}

	if !d.Capabilities().Resume {
		t.Errorf("gemini does not declare resume: %+v", d.Capabilities())
	}

	// interrupt
	prompt(t, s, "SLOW")
	until(t, ch, func(e agent.Event) bool { return e.Kind == agent.KindItemDelta })
	if err := s.Interrupt(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs = until(t, ch, turnDone)
	if st := evs[len(evs)-1].Turn.Status; st != agent.TurnInterrupted {
		t.Fatalf("interrupted turn ended %q", st)
	}
	if err := s.Interrupt(t.Context()); !errors.Is(err, agent.ErrNoTurn) {
		t.Errorf("interrupt between turns: %v", err)
	}
}

// A Gemini CLI session closed after a turn is resumed by its native id,
// twice, straight away (within the minute its chat file is named for):
// the resumed session says it is the same one, and the model is sent the
// earlier turns.
func TestRealCLIGeminiResume(t *testing.T) {
	d, fake := geminiDriver(t, fakegemini.Options{})
	ws, home := t.TempDir(), t.TempDir()
	id := ""
	for i, say := range []string{"one", "two", "three"} {
		req := agent.StartRequest{Workspace: ws, Home: home, Resume: id}
		s, err := d.Start(t.Context(), req)
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		ch := events(t, s)
		evs := until(t, ch, func(e agent.Event) bool { return e.Kind == agent.KindSessionStarted })
		if evs[0].Kind != agent.KindSessionStarted || evs[0].Session.NativeID == "" || (id != "" && evs[0].Session.NativeID != id) {
			t.Fatalf("start %d: events %s, session %+v, resumed %q", i, kinds(evs), evs[0].Session, id)
		}
		id = evs[0].Session.NativeID
		before := len(fake.Requests())
		prompt(t, s, "SAY "+say)
		evs = until(t, ch, turnDone)
		if got := text(evs); got != say {
			t.Fatalf("turn %d said %q; %s", i, got, kinds(evs))
		}
		var sent string
		for _, r := range fake.Requests()[before:] {
			if strings.Contains(r.Path, ":streamGenerateContent") {
				sent = string(r.Body)
			}
		}
		for _, earlier := range []string{"one", "two", "three"}[:i] {
			if !strings.Contains(sent, `"SAY `+earlier+`"`) || !strings.Contains(sent, `"`+earlier+`"`) {
				t.Fatalf("turn %d's request does not carry the turn %q: %s", i, earlier, sent)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !d.Capabilities().Resume {
		t.Errorf("capabilities %+v", d.Capabilities())
	}
}
