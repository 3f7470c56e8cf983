package runview

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
)

func newTestApprover(in io.Reader, errOut io.Writer) *approver {
	scr := newScreen(io.Discard, errOut, false, false)
	return newApprover(Config{Approve: ApproveAsk, InTerminal: true, In: in}, scr, "/w", nil)
}

func writeReq() claude.PermissionRequest {
	return claude.PermissionRequest{ToolName: "Write", Input: []byte(`{"file_path":"/w/a.txt"}`)}
}

func TestAlwaysIsRememberedAndSentAsRule(t *testing.T) {
	var errs strings.Builder
	a := newTestApprover(strings.NewReader("a\n"), &errs)
	first, err := a.decide(t.Context(), writeReq())
	if err != nil {
		t.Fatal(err)
	}
	allow, ok := first.(claude.Allow)
	if !ok || len(allow.UpdatedPermissions) != 1 {
		t.Fatalf("first answer = %#v", first)
	}
	u := allow.UpdatedPermissions[0]
	if u.Type != "addRules" || u.Behavior != "allow" || u.Destination != "session" || len(u.Rules) != 1 || u.Rules[0].ToolName != "Write" {
		t.Errorf("update = %+v", u)
	}
	// The input is used up: a second question would be denied.
	second, err := a.decide(t.Context(), writeReq())
	if _, ok := second.(claude.Allow); !ok || err != nil {
		t.Errorf("second answer = %#v, %v; want Allow without asking", second, err)
	}
	if n := strings.Count(errs.String(), "Allow Write a.txt?"); n != 1 {
		t.Errorf("asked %d times:\n%s", n, errs.String())
	}
	other, _ := a.decide(t.Context(), claude.PermissionRequest{ToolName: "Bash", Input: []byte(`{"command":"ls"}`)})
	if d, ok := other.(claude.Deny); !ok || d.Message != denyNoAnswer {
		t.Errorf("another tool = %#v; want a deny for lack of an answer", other)
	}
}

func TestYesAllowsOnce(t *testing.T) {
	a := newTestApprover(strings.NewReader("y\n"), io.Discard)
	res, _ := a.decide(t.Context(), writeReq())
	if al, ok := res.(claude.Allow); !ok || al.UpdatedPermissions != nil {
		t.Errorf("answer = %#v", res)
	}
	if a.remembered("Write") {
		t.Error("yes once was remembered")
	}
}

func TestWithdrawnQuestionKeepsTheLateAnswer(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	a := newTestApprover(pr, io.Discard)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := a.decide(ctx, writeReq()); err == nil {
		t.Fatal("a withdrawn question got an answer")
	}
	go io.WriteString(pw, "y\n") // typed late: it answers the next question
	res, err := a.decide(t.Context(), writeReq())
	if _, ok := res.(claude.Allow); !ok || err != nil {
		t.Errorf("next answer = %#v, %v", res, err)
	}
}

func TestModesDecideWithoutAsking(t *testing.T) {
	for mode, want := range map[Approve]string{ApproveAllow: "allow", ApproveDeny: denyByFlag} {
		scr := newScreen(io.Discard, io.Discard, false, false)
		a := newApprover(Config{Approve: mode, InTerminal: true, In: strings.NewReader("n\n")}, scr, "/w", nil)
		res, _ := a.decide(t.Context(), writeReq())
		switch r := res.(type) {
		case claude.Allow:
			if want != "allow" {
				t.Errorf("%s: allowed", mode)
			}
		case claude.Deny:
			if r.Message != want {
				t.Errorf("%s: deny %q", mode, r.Message)
			}
		}
	}
}

func TestParseApproveAndReadPrompt(t *testing.T) {
	if a, err := ParseApprove(" Allow "); a != ApproveAllow || err != nil {
		t.Errorf("ParseApprove = %q, %v", a, err)
	}
	if _, err := ParseApprove("sometimes"); err == nil {
		t.Error("ParseApprove accepted sometimes")
	}
	if p, err := ReadPrompt([]string{"fix", "it"}, nil); p != "fix it" || err != nil {
		t.Errorf("ReadPrompt args = %q, %v", p, err)
	}
	if p, err := ReadPrompt([]string{"-"}, strings.NewReader("from stdin\n")); p != "from stdin\n" || err != nil {
		t.Errorf("ReadPrompt stdin = %q, %v", p, err)
	}
	if _, err := ReadPrompt([]string{"-"}, strings.NewReader(" \n")); err != ErrEmptyPrompt {
		t.Errorf("ReadPrompt empty = %v", err)
	}
}
