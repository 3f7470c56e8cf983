package gemini

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tetherhq/tether/driver/internal/agentproc"
)

// ErrBadSessionID: a native id to resume that cannot be a Gemini CLI
// session id.
var ErrBadSessionID = errors.New("gemini: not a session id")

// How Gemini CLI 0.61.0 keeps a conversation: one file per session in
// <home>/.gemini/tmp/<project>/chats, named
// session-<UTC minute, 2006-01-02T15-04>-<first 8 of the id>.jsonl (older
// releases wrote .json), whose records are the session's metadata, its
// messages, and {"$set": ...} updates; a {"$set": {"messages": ...}}
// replaces every message before it.
const (
	chatsDir      = "chats"
	sessionPrefix = "session-"
	// resumedTag ends a saved chat's name after a resume, unusedTag the
	// name of the file a fresh start left.
	resumedTag = "-resumed"
	unusedTag  = "-unused"
	// maxMetaLine bounds the first line of a chat file, its metadata.
	maxMetaLine = 1 << 20
	// maxLegacyChat bounds a legacy .json chat read for its id.
	maxLegacyChat = 64 << 20
)

// beforeResume renames the chat files of session id, before Gemini CLI
// 0.61.0 runs to load it, out of the way of two things the CLI does:
//
//   - session/load first starts the session afresh under the same id
//     (Config.initialize, GeminiClient.startChat): ChatRecordingService
//     appends its metadata and a $set of the initial context to
//     session-<this minute>-<short id>.jsonl, which, if that is the saved
//     chat (a resume within the minute the session began), wipes its
//     messages, and SessionSelector.findSession then finds nothing ("No
//     previous sessions found for this project");
//   - at start, cleanupExpiredSessions deletes every chat file with no
//     messages (such as the one that fresh start leaves) and with it each
//     file whose name ends in the same -<short id>.jsonl
//     (deriveShortIdFromFileName), which is the saved chat.
//
// The saved chat becomes session-<minute>-<short id>-resumed.jsonl, a name
// the CLI never makes and that does not end in a short id: the CLI still
// lists it (getSessionFiles reads every session-*.jsonl and knows it by
// the id inside), loads it and writes the resumed turns to it. The file an
// earlier resume's fresh start left under the saved chat's old name
// becomes ...-unused.jsonl, which the cleanup deletes alone.
func beforeResume(env []string, id string) error {
	if len(id) < 8 || strings.ContainsAny(id, `/\.`) || strings.TrimSpace(id) != id {
		return fmt.Errorf("%w: %q", ErrBadSessionID, id)
	}
	tmp := filepath.Join(geminiHome(env), ".gemini", "tmp")
	projects, err := os.ReadDir(tmp)
	if errors.Is(err, os.ErrNotExist) {
		return nil // nothing saved here; session/load says so
	}
	if err != nil {
		return fmt.Errorf("chats: %w", err)
	}
	short := id[:8]
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		dir := filepath.Join(tmp, p.Name(), chatsDir)
		files, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("chats: %w", err)
		}
		for _, f := range files {
			name := f.Name()
			ext := filepath.Ext(name)
			stem := strings.TrimSuffix(name, ext)
			if !f.Type().IsRegular() || (ext != ".jsonl" && ext != ".json") ||
				!strings.HasPrefix(name, sessionPrefix) || !strings.HasSuffix(stem, "-"+short) {
				continue
			}
			path := filepath.Join(dir, name)
			owner, err := chatSession(path, ext == ".json")
			if err != nil {
				return err
			}
			if owner != id {
				continue
			}
			if err := renameFree(path, filepath.Join(dir, stem+resumedTag+ext), filepath.Join(dir, stem+unusedTag+ext)); err != nil {
				return err
			}
		}
	}
	return nil
}

// renameFree renames path to the first of names that is not taken, or
// leaves it when all are.
func renameFree(path string, names ...string) error {
	for _, to := range names {
		if _, err := os.Lstat(to); err == nil {
			continue
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("chats: %w", err)
		}
		if err := os.Rename(path, to); err != nil {
			return fmt.Errorf("chats: %w", err)
		}
		return nil
	}
	return nil
}

// geminiHome is where Gemini CLI keeps .gemini: $GEMINI_CLI_HOME, else
// $HOME, as the agent will see them.
func geminiHome(env []string) string {
	h, _ := agentproc.LookupEnv(env, "GEMINI_CLI_HOME")
	home, _ := agentproc.LookupEnv(env, "HOME")
	if h = cmp.Or(h, home); h != "" {
		return h
	}
	h, _ = os.UserHomeDir()
	return h
}

// chatSession is the session id a chat file records: the first line's
// for .jsonl, the document's for a legacy .json. A file that does not
// parse is no session's ("").
func chatSession(path string, legacy bool) (string, error) {
	var raw []byte
	var err error
	if legacy {
		raw, err = readLimited(path)
	} else {
		raw, err = readLine(path)
	}
	if err != nil {
		return "", fmt.Errorf("chats: %w", err)
	}
	var meta struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(raw, &meta) != nil {
		return "", nil
	}
	return meta.SessionID, nil
}

// readLimited is path's content, up to maxLegacyChat bytes.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxLegacyChat))
}

// readLine is the first line of path, up to maxMetaLine bytes.
func readLine(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxMetaLine)
	if sc.Scan() {
		return sc.Bytes(), nil
	}
	return nil, sc.Err()
}
