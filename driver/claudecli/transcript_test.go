package claudecli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
)

// storeID is the session id of the store capture.
const storeID = "87b11bb4-8978-4606-9cba-9664ec665ff7"

// homeWithStore is a home whose CLI store holds the capture of a real
// CLI's session (a text turn, then a Bash call allowed), plus extra lines.
func homeWithStore(t *testing.T, extra string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "transcripts", "store-two-turns-bash.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	dir := filepath.Join(home, ".claude", "projects", "-workdir")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, storeID+".jsonl"), append(data, extra...), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// A resumed conversation's past, read from the CLI's own store: the
// prompts, the replies and the command with its output, in order; a
// subagent's thread and bookkeeping lines are passed over.
func TestTranscriptItems(t *testing.T) {
	sidechain := `{"type":"assistant","isSidechain":true,"message":{"id":"msg_side","type":"message","role":"assistant","content":[{"type":"text","text":"a subagent's own thread"}]}}` + "\n"
	items, err := transcriptItems(homeWithStore(t, sidechain+"not json\n"), storeID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		text := it.Text
		if it.Command != nil {
			text = it.Command.Command + " → " + strings.TrimSpace(it.Command.Output)
		}
		got = append(got, string(it.Type)+": "+text)
		if it.Status == agent.ItemInProgress {
			t.Errorf("item %s still in progress", it.ID)
		}
	}
	want := []string{
		"user_message: SAY hello there",
		"message: hello there",
		`user_message: USE_TOOL Bash {"command":"echo hi"}`,
		"command: echo hi → hi",
		"message: tool said: hi",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("items:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if items, err := transcriptItems(t.TempDir(), storeID); items != nil || err != nil {
		t.Fatalf("no store: %v %v", items, err)
	}
}
