package codex_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
)

func isFileChange(e agent.Event) bool {
	return e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemFileChange
}

// A file change asks first (approval naming the file, once or for the
// session); allowed, the file is written, the item carries its diff, and
// Diff reports it, from Codex's history too after a resume.
func TestRealCLIFileChangeAndDiff(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	s, w := r.start(agentStart())
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "USE_PATCH notes.txt hello patch"}); err != nil {
		t.Fatal(err)
	}
	req, _ := w.until(0, isApproval)
	a := req.Approval
	if a.Tool != "apply_patch" || !strings.Contains(a.Title, "notes.txt") || len(a.Scopes) != 2 || a.Scopes[1] != agent.ScopeSession {
		t.Fatalf("approval %+v", a)
	}
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: a.ID, Decision: agent.Allow, Scope: agent.ScopeSession}); err != nil {
		t.Fatal(err)
	}
	end, _ := w.turnEnd(0)
	if end.Turn.Status != agent.TurnCompleted {
		t.Fatalf("turn.completed %+v\n%s", end.Turn, w.dump())
	}
	data, err := os.ReadFile(filepath.Join(r.ws, "notes.txt"))
	if err != nil || string(data) != "hello patch\n" {
		t.Fatalf("notes.txt = %q, %v", data, err)
	}
	fc, _ := w.until(0, isFileChange)
	if fc.Item.Status != agent.ItemDone || len(fc.Item.Changes) != 1 || fc.Item.ID != a.ItemID {
		t.Fatalf("file change %+v", fc.Item)
	}
	checkDiff := func(changes []agent.FileChange) {
		t.Helper()
		if len(changes) != 1 || !strings.HasSuffix(changes[0].Path, "notes.txt") || changes[0].Kind != agent.ChangeAdd ||
			!strings.Contains(changes[0].Diff, "hello patch") {
			t.Errorf("changes %+v", changes)
		}
	}
	checkDiff(fc.Item.Changes)
	diff, err := s.Diff(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	checkDiff(diff)
	thread := s.NativeID()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	resumed, _ := r.start(agent.StartRequest{Resume: thread})
	diff, err = resumed.Diff(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	checkDiff(diff)
}

// A file change denied is declined and leaves the workspace alone.
func TestRealCLIFileChangeDenied(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	s, w := r.start(agentStart())
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "USE_PATCH notes.txt no"}); err != nil {
		t.Fatal(err)
	}
	req, _ := w.until(0, isApproval)
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: req.Approval.ID, Decision: agent.Deny}); err != nil {
		t.Fatal(err)
	}
	w.turnEnd(0)
	fc, _ := w.until(0, isFileChange)
	if fc.Item.Status != agent.ItemDeclined {
		t.Errorf("file change %+v", fc.Item)
	}
	if _, err := os.Stat(filepath.Join(r.ws, "notes.txt")); !os.IsNotExist(err) {
		t.Errorf("the denied patch was applied: %v", err)
	}
	diff, err := s.Diff(ctxFor(t))
	if err != nil || len(diff) != 0 {
		t.Errorf("Diff = %+v, %v; want none", diff, err)
	}
}
