package shim

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func testBrief() AgentBrief {
	return AgentBrief{AgentID: "a", Role: "backend engineer", Workstream: "api", Description: "Build the API.",
		Constraints:  []string{"No new deps"},
		ProjectBrief: ProjectBrief{Title: "Shop", Description: "An online shop", Goals: []string{"Fast", "Safe"}, Constraints: []string{"Go only"}},
		KnowledgeSnap: KnowledgeCounts{EstimatedTokens: 10, Workstreams: make([]json.RawMessage, 2),
			ArtifactIndex: make([]json.RawMessage, 3)}}
}

func TestBriefToPromptSections(t *testing.T) {
	got := BriefToPrompt(testBrief(), false)
	want := "You are a backend engineer working on the \"api\" workstream.\nBuild the API.\n\n## Project\nShop: An online shop\n\n" +
		"## Goals\n- Fast\n- Safe\n\n## Constraints\n- No new deps\n- Go only\n\n## Context\n2 active workstream(s), 3 artifact(s)."
	if got != want {
		t.Errorf("prompt\n%s\nwant\n%s", got, want)
	}
	b := testBrief()
	b.KnowledgeSnap.EstimatedTokens = 0
	b.ProjectBrief.Goals, b.Constraints, b.ProjectBrief.Constraints = nil, nil, nil
	if got := BriefToPrompt(b, true); strings.Contains(got, "## Goals") || strings.Contains(got, "## Context") ||
		strings.Contains(got, "## Constraints") || !strings.HasPrefix(got, continuation) {
		t.Errorf("sparse continuation prompt\n%s", got)
	}
}

// Over the cap, the least important goes first: the context counts, the
// project's description, goals from the last, constraints, and only then
// the description; the role line always stays.
func TestBriefToPromptCutsInOrder(t *testing.T) {
	b := testBrief()
	b.ProjectBrief.Description = strings.Repeat("p", 1000)
	b.ProjectBrief.Goals = nil
	for i := range 600 {
		b.ProjectBrief.Goals = append(b.ProjectBrief.Goals, fmt.Sprintf("goal %03d", i))
	}
	b.Description = strings.Repeat("d", 2000)
	got := BriefToPrompt(b, false)
	if n := len([]rune(got)); n > MaxPrompt {
		t.Fatalf("%d characters", n)
	}
	if strings.Contains(got, "## Context") || strings.Contains(got, strings.Repeat("p", 1000)) {
		t.Errorf("context or the whole project description survived")
	}
	if !strings.Contains(got, "- goal 000") || strings.Contains(got, "goal 599") || !strings.Contains(got, "more left out)") {
		t.Errorf("goals not cut from the last")
	}
	if !strings.Contains(got, strings.Repeat("d", 2000)) || !strings.Contains(got, "- No new deps") || !strings.HasPrefix(got, "You are a backend engineer") {
		t.Errorf("the description, constraints or role were cut before the goals")
	}
	b.Description = strings.Repeat("d", 20000)
	got = BriefToPrompt(b, true)
	if n := len([]rune(got)); n > MaxPrompt || !strings.HasPrefix(got, continuation) || !strings.Contains(got, "d...") {
		t.Errorf("a giant description: %d characters", n)
	}
}

func FuzzBriefToPrompt(f *testing.F) {
	f.Add("role", "desc", "goal", 3, 10)
	f.Add(strings.Repeat("r", 9000), "", "", 0, 0)
	f.Fuzz(func(t *testing.T, role, desc, goal string, goals, rep int) {
		rep, goals = abs(rep%500), abs(goals%2000)
		b := AgentBrief{Role: role, Description: strings.Repeat(desc, rep)}
		for range goals {
			b.ProjectBrief.Goals = append(b.ProjectBrief.Goals, goal)
		}
		if n := len([]rune(BriefToPrompt(b, goals%2 == 0))); n > MaxPrompt {
			t.Fatalf("%d characters", n)
		}
	})
}

func TestArtifactKind(t *testing.T) {
	for path, want := range map[string]string{
		"src/foo.test.ts": "test", "a/b.spec.js": "test", "test_api.py": "test", "main.go": "code", "App.TSX": "code",
		"README.md": "document", "notes.txt": "document", "cfg.yaml": "config", "x.toml": "config", "logo.png": "other",
		"Makefile": "other", "dir\\win.json": "config",
	} {
		if got := ArtifactKind(path); got != want {
			t.Errorf("%s: %s, want %s", path, got, want)
		}
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
