package acp_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/acp"
	"github.com/tetherhq/tether/driver/acp/opencodeacp"
	"github.com/tetherhq/tether/driver/opencode"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// openCodeEnv is the real opencode CLI's config against a fresh fake
// OpenAI API: the driver config and the session's home.
func openCodeEnv(t *testing.T) (driver.Config, string, *fakeopenai.Server) {
	t.Helper()
	cli := testenv.RequireOpenCodeCLI(t)
	fake, err := fakeopenai.Start(fakeopenai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	home := t.TempDir()
	env, err := testenv.OpenCodeEnv(home, fake.URL(), true)
	if err != nil {
		t.Fatal(err)
	}
	return driver.Config{CLIPath: cli, Env: env}, home, fake
}

// The journey through `opencode acp`: a text reply, a shell command
// allowed and one denied, messages, an interrupted slow turn, and the
// session resumed in a new process.
func TestRealCLIOpenCodeACPJourney(t *testing.T) {
	cfg, home, _ := openCodeEnv(t)
	d, err := acp.New(cfg, opencodeacp.Spec())
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	s, err := d.Start(t.Context(), agent.StartRequest{Workspace: ws, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !d.Capabilities().Resume {
		t.Errorf("opencode acp declares no resume: %+v", d.Capabilities())
	}
	ch := events(t, s)

	prompt(t, s, "SAY hello from opencode")
	evs := until(t, ch, turnDone)
	if got := text(evs); got != "hello from opencode" {
		t.Fatalf("text %q; %s", got, kinds(evs))
	}

	prompt(t, s, "USE_SHELL touch made-by-opencode")
	evs = until(t, ch, isApproval)
	ap := evs[len(evs)-1].Approval
	resolve(t, s, ap.ID, agent.Allow)
	evs = until(t, ch, turnDone)
	if cmds := completed(evs, agent.ItemCommand); len(cmds) != 1 || cmds[0].Status != agent.ItemDone {
		t.Fatalf("allowed command %+v; %s", cmds, kinds(evs))
	}
	if _, err := os.Stat(filepath.Join(ws, "made-by-opencode")); err != nil {
		t.Fatal(err)
	}

	prompt(t, s, "USE_SHELL touch refused")
	evs = until(t, ch, isApproval)
	resolve(t, s, evs[len(evs)-1].Approval.ID, agent.Deny)
	evs = until(t, ch, turnDone)
	if cmds := completed(evs, agent.ItemCommand); len(cmds) != 1 || cmds[0].Status != agent.ItemDeclined {
		t.Fatalf("denied command %+v; %s", cmds, kinds(evs))
	}
	if _, err := os.Stat(filepath.Join(ws, "refused")); err == nil {
		t.Fatal("the denied command ran")
	}

	msgs, err := s.Messages(t.Context())
	if err != nil || len(msgs) == 0 || msgs[0].Text != "hello from opencode" {
		t.Fatalf("messages %+v %v", msgs, err)
	}

	prompt(t, s, "SLOW")
	until(t, ch, func(e agent.Event) bool { return e.Kind == agent.KindItemDelta })
	if err := s.Interrupt(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs = until(t, ch, turnDone)
	if st := evs[len(evs)-1].Turn.Status; st != agent.TurnInterrupted {
		t.Fatalf("interrupted turn ended %q", st)
	}

	native := s.NativeID()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := d.Start(t.Context(), agent.StartRequest{Workspace: ws, Home: home, Resume: native})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rch := events(t, r)
	if r.NativeID() != native {
		t.Fatalf("resumed %q, want %q", r.NativeID(), native)
	}
	prompt(t, r, "SAY resumed")
	if got := text(until(t, rch, turnDone)); got != "resumed" {
		t.Fatalf("resumed text %q", got)
	}
	if err := r.Steer(t.Context(), agent.Prompt{Text: "x"}); !errors.Is(err, agent.ErrUnsupported) {
		t.Errorf("steer: %v", err)
	}
}

// The same journey through the native OpenCode driver and through
// `opencode acp` gives the same canonical items: their types, statuses
// and message text, turn by turn.
func TestRealCLIOpenCodeCrossCheck(t *testing.T) {
	journey := []struct {
		prompt string
		answer agent.Decision
	}{{"SAY the same words", ""}, {"USE_SHELL touch allowed", agent.Allow}, {"USE_SHELL touch denied", agent.Deny}}
	run := func(newDriver func(driver.Config) (agent.Driver, error)) []string {
		cfg, home, _ := openCodeEnv(t)
		d, err := newDriver(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s, err := d.Start(t.Context(), agent.StartRequest{Workspace: t.TempDir(), Home: home})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ch := events(t, s)
		var got []string
		for _, step := range journey {
			prompt(t, s, step.prompt)
			var evs []agent.Event
			if step.answer != "" {
				evs = until(t, ch, isApproval)
				resolve(t, s, evs[len(evs)-1].Approval.ID, step.answer)
			}
			evs = append(evs, until(t, ch, turnDone)...)
			got = append(got, summary(evs))
		}
		return got
	}
	native := run(func(cfg driver.Config) (agent.Driver, error) { return opencode.New(cfg) })
	overACP := run(func(cfg driver.Config) (agent.Driver, error) { return acp.New(cfg, opencodeacp.Spec()) })
	if !slices.Equal(native, overACP) {
		t.Fatalf("native opencode:\n%s\nopencode acp:\n%s", strings.Join(native, "\n"), strings.Join(overACP, "\n"))
	}
}

// summary is a turn's completed items that both protocols report (the
// prompt's echo and reasoning are native only), and the turn's status.
func summary(evs []agent.Event) string {
	var parts []string
	for _, e := range evs {
		switch {
		case e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemMessage:
			parts = append(parts, fmt.Sprintf("message(%s)", e.Item.Text))
		case e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand:
			parts = append(parts, fmt.Sprintf("command:%s", e.Item.Status))
		case e.Kind == agent.KindApprovalResolved:
			parts = append(parts, "resolved:"+string(e.Resolution.Decision))
		case e.Kind == agent.KindTurnCompleted:
			parts = append(parts, "turn:"+string(e.Turn.Status))
		}
	}
	return strings.Join(parts, " ")
}
