package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// A real agent's session taken over: Codex on a runner killed after its
// first turn goes on, on a survivor that shares the workspaces and homes,
// through Codex's own resume. Its second turn's request to the model
// carries the first turn: the conversation, not only the id, went on.
func TestRealCLIFleetTakesOverCodex(t *testing.T) {
	cli := testenv.RequireCodexCLI(t)
	fake, err := fakeopenai.Start(fakeopenai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	env, err := testenv.CodexEnv(t.TempDir(), fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	var pass []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == "CODEX_HOME" || k == "OPENAI_API_KEY" {
			pass = append(pass, kv)
		}
	}
	shared := t.TempDir()
	fl := startFleetEnv(t, 3, pass, "--cli", "codex="+cli,
		"--workspaces", filepath.Join(shared, "workspaces"), "--homes", filepath.Join(shared, "homes"))
	a, c := apiClient(fl[0].serveProc), apiClient(fl[2].serveProc)
	waitRunners(t, a, "r0", "r1", "r2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()
	s, err := a.Create(ctx, client.CreateRequest{Agent: "codex", WorkspaceID: "moved", Runner: "r1", Prompt: "SAY first of two"})
	if err != nil {
		t.Fatal(err)
	}
	w := watch(t, a, s.ID)
	w.until("the first turn's end", kind(agent.KindTurnCompleted))
	if err := fl[1].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	end := w.until("session.ended", kind(agent.KindSessionEnded))
	if end.Session == nil || end.Session.Reason != agent.ReasonRunnerLost {
		t.Fatalf("session.ended %+v, want %s", end.Session, agent.ReasonRunnerLost)
	}
	before := len(fake.Requests())
	if _, err := c.Resume(ctx, s.ID); err != nil {
		t.Fatalf("take over: %v", err)
	}
	if err := c.Prompt(ctx, s.ID, "SAY second of two"); err != nil {
		t.Fatal(err)
	}
	var after []agent.Event
	for e, err := range a.Events(ctx, s.ID, uint64(end.Seq), 0) {
		if err != nil {
			t.Fatalf("events after the take-over: %v: %s", err, kinds(after))
		}
		after = append(after, e)
		if e.Kind == agent.KindTurnCompleted {
			break
		}
	}
	last := after[len(after)-1]
	if after[0].Seq != end.Seq+1 || after[0].Kind != agent.KindSessionStarted || last.Turn == nil ||
		last.Turn.Status != agent.TurnCompleted || !strings.Contains(last.Turn.Text, "second of two") {
		t.Fatalf("after the take-over: %s (turn %+v, session %+v, error %+v)", kinds(after), last.Turn, last.Session, last.Error)
	}
	if err := seqsInOrder(append(w.seen, after...)); err != nil {
		t.Fatalf("the session's seq across the take-over: %v", err)
	}
	reqs := fake.Requests()[before:]
	carried := false
	for _, r := range reqs {
		body, _ := json.Marshal(r.Body)
		carried = carried || (strings.Contains(string(body), "first of two") && strings.Contains(string(body), "second of two"))
	}
	if !carried {
		t.Fatalf("no request of the second turn carried the first (%d requests)", len(reqs))
	}
}
