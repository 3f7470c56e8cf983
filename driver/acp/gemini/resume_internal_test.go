package gemini

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestBeforeResumeRenames(t *testing.T) {
	home := t.TempDir()
	chats := filepath.Join(home, ".gemini", "tmp", "p", "chats")
	if err := os.MkdirAll(chats, 0o700); err != nil {
		t.Fatal(err)
	}
	const id = "4a0df5de-cc65-4dae-979c-7786ed43c35f"
	write := func(name, sid string) {
		if err := os.WriteFile(filepath.Join(chats, name), []byte(`{"sessionId":"`+sid+`"}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("session-2026-11-28T08-12-4a0df5de.jsonl", id)
	write("session-2026-11-28T08-13-4a0df5de.jsonl", "4a0df5de-other")
	write("session-2026-11-28T08-12-73a1be98.jsonl", "73a1be98-x")
	env := []string{"HOME=" + home}
	if err := beforeResume(env, id); err != nil {
		t.Fatal(err)
	}
	// a fresh start's file under the old name, then another resume
	write("session-2026-11-28T08-12-4a0df5de.jsonl", id)
	if err := beforeResume(env, id); err != nil {
		t.Fatal(err)
	}
	var got []string
	es, _ := os.ReadDir(chats)
	for _, e := range es {
		got = append(got, e.Name())
	}
	want := []string{
		"session-2026-11-28T08-12-4a0df5de-resumed.jsonl",
		"session-2026-11-28T08-12-4a0df5de-unused.jsonl",
		"session-2026-11-28T08-12-73a1be98.jsonl",
		"session-2026-11-28T08-13-4a0df5de.jsonl",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("chats %q", got)
	}
	for _, bad := range []string{"", "short", "../../etc/passwd", " 4a0df5de-cc65"} {
		if err := beforeResume(env, bad); !errors.Is(err, ErrBadSessionID) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if err := beforeResume([]string{"HOME=" + t.TempDir()}, id); err != nil {
		t.Errorf("no chats: %v", err)
	}
}
