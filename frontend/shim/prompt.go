package shim

import (
	"fmt"
	"strings"
)

// MaxPrompt is the prompt's cap in characters, as the reference shims'.
const MaxPrompt = 8000

// continuation opens the prompt of a resume that hands the agent a new
// assignment (another workstream or description), as the reference does.
const continuation = "Your previous assignment is complete. Here is your next assignment:\n"

// promptParts are the brief's sections, each cut on its own so the
// prompt stays under MaxPrompt by giving up the least important first.
type promptParts struct {
	continuation bool
	role         string // always kept
	description  string
	project      string
	goals        []string
	constraints  []string
	context      string
}

func briefParts(b AgentBrief) promptParts {
	p := promptParts{
		role:        fmt.Sprintf("You are a %s working on the %q workstream.", b.Role, b.Workstream),
		description: b.Description,
		project:     b.ProjectBrief.Title + ": " + b.ProjectBrief.Description,
		goals:       b.ProjectBrief.Goals,
		constraints: append(append([]string(nil), b.Constraints...), b.ProjectBrief.Constraints...),
	}
	k := b.KnowledgeSnap
	if k.EstimatedTokens > 0 {
		var counts []string
		for _, c := range []struct {
			n    int
			what string
		}{{len(k.Workstreams), "active workstream(s)"}, {len(k.PendingDecisions), "pending decision(s)"}, {len(k.ArtifactIndex), "artifact(s)"}} {
			if c.n > 0 {
				counts = append(counts, fmt.Sprintf("%d %s", c.n, c.what))
			}
		}
		if len(counts) > 0 {
			p.context = strings.Join(counts, ", ") + "."
		}
	}
	return p
}

func (p promptParts) render() string {
	var sb strings.Builder
	if p.continuation {
		sb.WriteString(continuation + "\n")
	}
	sb.WriteString(p.role + "\n" + p.description + "\n")
	sb.WriteString("\n## Project\n" + p.project + "\n")
	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		sb.WriteString("\n## " + title + "\n")
		for _, it := range items {
			sb.WriteString("- " + it + "\n")
		}
	}
	list("Goals", p.goals)
	list("Constraints", p.constraints)
	if p.context != "" {
		sb.WriteString("\n## Context\n" + p.context + "\n")
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// BriefToPrompt renders a brief as the agent's prompt, with the reference
// shims' sections (role, description, project, goals, constraints, and the
// knowledge snapshot's counts). Over MaxPrompt it does not cut the tail
// blindly: it gives up, in order and only as much as needed, the context
// counts, the project's description, goals from the last, constraints
// from the last, and then the description's tail. The role line and the
// first of each list outlive the rest; a list cut says how many it lost.
func BriefToPrompt(b AgentBrief, isContinuation bool) string {
	p := briefParts(b)
	p.continuation = isContinuation
	return fit(p)
}

func fit(p promptParts) string {
	if p.over() <= 0 {
		return p.render()
	}
	p.context = ""
	if n := p.over(); n > 0 {
		p.project = cutText(p.project, n)
	}
	p.goals = cutList(p.goals, func(items []string) int { q := p; q.goals = items; return q.over() })
	p.constraints = cutList(p.constraints, func(items []string) int { q := p; q.constraints = items; return q.over() })
	if n := p.over(); n > 0 {
		p.description = cutText(p.description, n)
	}
	s := p.render()
	if r := []rune(s); len(r) > MaxPrompt { // only a giant role line is left
		s = string(r[:MaxPrompt-3]) + "..."
	}
	return s
}

// cutText drops n characters (and room for "...") from the end of s.
func cutText(s string, n int) string {
	r := []rune(s)
	keep := len(r) - n - 3
	if keep <= 0 {
		return "..."
	}
	return string(r[:keep]) + "..."
}

// cutList drops items from the end, then shortens the last one left,
// while over says the prompt is too long; a note counts what went.
func cutList(items []string, over func([]string) int) []string {
	if len(items) == 0 || over(items) <= 0 {
		return items
	}
	all := len(items)
	with := func(kept int) []string {
		return append(append([]string(nil), items[:kept]...), fmt.Sprintf("(%d more left out)", all-kept))
	}
	// The most items that fit, by bisection: a brief may hold thousands.
	lo, hi := 0, all-1 // with(lo) is known to fit or lo is 0
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if over(with(mid)) <= 0 {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo >= 1 {
		return with(lo)
	}
	out := []string{items[0]}
	if all > 1 {
		out = append(out, fmt.Sprintf("(%d more left out)", all-1))
	}
	if n := over(out); n > 0 {
		out[0] = cutText(out[0], n)
	}
	return out
}

// over is by how many characters the prompt passes MaxPrompt.
func (p promptParts) over() int { return len([]rune(p.render())) - MaxPrompt }
