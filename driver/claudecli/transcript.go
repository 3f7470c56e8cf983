package claudecli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tetherhq/tether/agent"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// maxTranscriptLine bounds one line of a transcript the CLI wrote.
const maxTranscriptLine = 64 << 20

// transcriptItems are the completed items of a conversation the CLI keeps
// in its own store, <home>/.claude/projects/<project>/<id>.jsonl: the
// prompts, replies and tool calls of a session being resumed, so the
// resumed session's Messages shows its past as Codex's and OpenCode's do.
// Lines it does not know (attachments, bookkeeping, subagents' own
// threads) are passed over. A conversation the store does not have gives
// no items and no error: the CLI, not this, decides whether it resumes.
func transcriptItems(home, id string) ([]agent.Item, error) {
	paths, err := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", id+".jsonl"))
	if err != nil || len(paths) == 0 {
		return nil, err
	}
	f, err := os.Open(paths[0])
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claudecli: transcript: %w", err)
	}
	defer f.Close()
	m := newCanonicalMapper(id, func() time.Time { return time.Time{} })
	var items []agent.Item
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxTranscriptLine)
	for sc.Scan() {
		for _, e := range transcriptLine(m, sc.Bytes()) {
			if e.Kind == agent.KindItemCompleted {
				it := *e.Item
				it.MessageID = ""
				items = append(items, it)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return items, fmt.Errorf("claudecli: transcript %s: %w", paths[0], err)
	}
	return items, nil
}

// transcriptLine maps one line of the CLI's store: a prompt starts a turn
// with the user's message; assistant lines and tool results map as the
// CLI's stream-json lines do.
func transcriptLine(m *canonicalMapper, line []byte) []agent.Event {
	var head struct {
		Type      string `json:"type"`
		Sidechain bool   `json:"isSidechain"`
		Message   struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &head) != nil || head.Sidechain || (head.Type != "user" && head.Type != "assistant") {
		return nil
	}
	var prompt string
	if head.Type == "user" && json.Unmarshal(head.Message.Content, &prompt) == nil {
		return m.startTurn(prompt, "")
	}
	msg, err := cc.Parse(append([]byte(nil), line...))
	if err != nil {
		return nil
	}
	return m.message(msg)
}
