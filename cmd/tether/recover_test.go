package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/internal/testing/boltpages"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
)

// populated runs a tether serve on a new data directory, has it run
// three sessions of the mock agent (one waiting for an approval when the
// runner stops) and stops it. It returns the directory and each session's
// last seq.
func populated(t *testing.T) (string, map[string]uint64) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	// A turn waits for its approval at the SIGTERM below: no grace for it.
	p := startServe(t, cleanEnv(), "--data", data, "--cli", mockCLI(t, "demo", 0), "--shutdown-timeout", "100ms")
	c := &client.Client{BaseURL: "http://" + p.addr, Token: testToken}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	prompts := []string{"hello", "go REQUEST_APPROVAL", "hello again"}
	for i, prompt := range prompts {
		if _, err := c.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: fmt.Sprintf("w%d", i), Prompt: prompt}); err != nil {
			t.Fatal(err)
		}
	}
	for { // the turns done, or waiting for the approval
		sessions, err := c.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		busy := 0
		for _, s := range sessions {
			if s.State == "running" && s.LastSeq < 5 {
				busy++
			}
		}
		pending, err := c.Approvals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(sessions) == len(prompts) && busy == 0 && len(pending) == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the sessions did not settle: %+v", sessions)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(waitLimit); code != 0 {
		t.Fatalf("tether serve exited %d:\n%s", code, p.log())
	}
	l, err := eventlog.Open(filepath.Join(data, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	last := map[string]uint64{}
	names, _ := l.Sessions()
	for _, name := range names {
		if strings.HasPrefix(name, "ses_") {
			last[name], _ = l.Last(name)
		}
	}
	if len(last) != len(prompts) {
		t.Fatalf("sessions in the log: %v", names)
	}
	return data, last
}

// pages lists the ids of the pages of a bbolt file that hold its trees
// (branches and leaves), as bbolt sees them.
func pages(t *testing.T, path string) (tree []int, count int) {
	t.Helper()
	for _, p := range boltpages.List(t, path) {
		if p.Type == "leaf" || p.Type == "branch" {
			tree = append(tree, p.ID)
		}
		count = p.ID + p.Overflow + 1
	}
	return tree, count
}

// overwrite puts garbage over page id of the file.
func overwrite(t *testing.T, path string, id int) { boltpages.Overwrite(t, path, id, 3) }

// damage is a way to damage a store's file.
type damage struct {
	name string
	do   func(t *testing.T, path string)
}

// overwriteALeaf overwrites the leaf a salvage loses least to: one that
// leaves some session whole (for the event log), or the last leaf.
func overwriteALeaf(t *testing.T, path string) {
	tree, _ := pages(t, path)
	if filepath.Base(path) != "events.db" {
		overwrite(t, path, tree[len(tree)-1])
		return
	}
	for i := len(tree) - 1; i >= 0; i-- {
		try := filepath.Join(t.TempDir(), "events.db")
		boltpages.Copy(t, path, try)
		overwrite(t, try, tree[i])
		rep, err := eventlog.Salvage(context.Background(), try, try+".out")
		if err != nil {
			t.Fatal(err)
		}
		whole, damaged := 0, 0
		for _, s := range rep.Sessions {
			switch {
			case !strings.HasPrefix(s.Name, "ses_"):
			case s.Complete():
				whole++
			default:
				damaged++
			}
		}
		if whole > 0 && damaged > 0 {
			overwrite(t, path, tree[i])
			return
		}
	}
	t.Fatal("no leaf whose loss leaves a session whole")
}

// cutInTheMiddle cuts the file in the middle of the pages it uses.
func cutInTheMiddle(t *testing.T, path string) {
	_, count := pages(t, path)
	if err := os.Truncate(path, int64(count/2*os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
}

// cutNearTheEnd has one more transaction grow the file, as a log that
// takes a large event does, then cuts off what it added: the tree the
// transaction before left is whole.
func cutNearTheEnd(t *testing.T, path string) {
	_, before := pages(t, path)
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("grown"))
		if err != nil {
			return err
		}
		return b.Put([]byte("v"), make([]byte, 1<<20))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, after := pages(t, path); after <= before {
		t.Fatalf("the file did not grow: %d pages, then %d", before, after)
	}
	if err := os.Truncate(path, int64(before*os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
}

// The damages each store is tried with.
var damages = map[string][]damage{
	"events.db":    {{"overwritten page", overwriteALeaf}, {"cut in the middle", cutInTheMiddle}, {"cut near the end", cutNearTheEnd}},
	"approvals.db": {{"overwritten page", overwriteALeaf}, {"cut in the middle", cutInTheMiddle}},
}

// A runner, a daemon and a shim refuse a damaged event log or approvals
// store with one sentence that names the file, says what is wrong and
// gives the command that recovers it; that command, typed as given,
// saves the readable sessions and leaves the damaged file as it was; the
// runner then starts on what it saved and serves it.
func TestDamagedStoreRefusedThenRecovered(t *testing.T) {
	for _, file := range []string{"events.db", "approvals.db"} {
		for _, d := range damages[file] {
			t.Run(file+"/"+d.name, func(t *testing.T) {
				data, last := populated(t)
				path := filepath.Join(data, file)
				d.do(t, path)
				damaged, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				command := refusedByAll(t, data, path)
				report := runAsTyped(t, command, data)
				if !strings.Contains(report, path+" is damaged: ") {
					t.Fatalf("the report does not say what is damaged:\n%s", report)
				}
				moves := regexp.MustCompile(`(?s)with tether stopped:\n(.*)\nor run this command again`).FindStringSubmatch(report)
				if moves == nil {
					t.Fatalf("the report does not say how to put the file in place:\n%s", report)
				}
				runAsTyped(t, strings.ReplaceAll(moves[1], "\\\n", ""), data)
				kept, _ := filepath.Glob(path + ".damaged-*")
				if len(kept) != 1 {
					t.Fatalf("the damaged file was not kept: %v", kept)
				}
				if b, err := os.ReadFile(kept[0]); err != nil || !bytes.Equal(b, damaged) {
					t.Fatalf("the damaged file changed (%v)", err)
				}
				servesRecovered(t, data, report, last)
			})
		}
	}
}

var recoverCommand = regexp.MustCompile("run `(tether recover --data [^`]+)`")

// refusedByAll starts tether serve, tether daemon and tether shim on the
// data directory; each must exit non-zero with one line on stderr, the
// sentence naming path. It returns the recovery command they give.
func refusedByAll(t *testing.T, data, path string) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv("TETHER_AUTH_TOKEN="+testToken, "XDG_RUNTIME_DIR="+t.TempDir())
	var command string
	for _, args := range [][]string{
		{"serve", "--addr", "127.0.0.1:0", "--sandbox", "off", "--data", data, "--cli", "claude=" + mockCLI(t, "demo", 0)},
		{"daemon", "--orchestrator", "ws://127.0.0.1:1", "--sandbox", "off", "--data", data},
		{"shim", "--mock", "--port", "0", "--workspace", ws, "--data-dir", data},
	} {
		r := tether(t, t.TempDir(), "", env, args...)
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		if r.code == 0 || len(lines) != 1 || strings.Contains(r.stderr, "goroutine") || strings.Contains(r.stderr, "panic") {
			t.Fatalf("tether %s: exit %d, stderr:\n%s", args[0], r.code, r.stderr)
		}
		m := recoverCommand.FindStringSubmatch(lines[0])
		if !strings.Contains(lines[0], path+" is damaged: ") || m == nil {
			t.Fatalf("tether %s: the line does not name the file and the command: %s", args[0], lines[0])
		}
		command = m[1]
		t.Logf("tether %s: %s", args[0], lines[0])
	}
	return command
}

// runAsTyped runs a command line as the operator would, in a shell, with
// this test's tether first on PATH.
func runAsTyped(t *testing.T, line, dir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "PATH="+binDir()+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	t.Logf("$ %s\n%s", line, out)
	return string(out)
}

var wholeSession = regexp.MustCompile(`session (ses_\w+): all (\d+) events saved`)

// servesRecovered starts tether serve on the recovered data: it lists
// every session, and those the report says were saved whole replay every
// event to their end.
func servesRecovered(t *testing.T, data, report string, last map[string]uint64) {
	t.Helper()
	p := startServe(t, cleanEnv(), "--data", data, "--cli", mockCLI(t, "demo", 0))
	c := &client.Client{BaseURL: "http://" + p.addr, Token: testToken}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	sessions, err := c.Sessions(ctx)
	if err != nil || len(sessions) != len(last) {
		t.Fatalf("sessions after recovery: %+v %v", sessions, err)
	}
	whole := wholeSession.FindAllStringSubmatch(report, -1)
	if strings.Contains(report, "events.db is damaged") {
		for id := range last { // each session is named (saved whole, or what could not be read), or the report says what was lost
			if !strings.Contains(report, "\n  lost: ") && !regexp.MustCompile(`session `+id+`: (all \d+ events saved|.*\n    could not read )`).MatchString(report) {
				t.Fatalf("the report does not say what became of session %s:\n%s", id, report)
			}
		}
	}
	if !strings.Contains(report, "events.db is damaged") {
		whole = nil
		for id, n := range last {
			whole = append(whole, []string{"", id, strconv.FormatUint(n, 10)})
		}
	}
	for _, m := range whole {
		id, n := m[1], m[2]
		var seqs []int64
		for e, err := range c.Events(ctx, id, 0, 1) {
			if err != nil {
				t.Fatalf("session %s: %v", id, err)
			}
			seqs = append(seqs, e.Seq)
		}
		want, _ := strconv.Atoi(n)
		// The runner's restart ends each session in its log: one event
		// or more after those saved.
		if len(seqs) < want || seqs[0] != 1 || uint64(seqs[want-1]) != last[id] {
			t.Fatalf("session %s replays %v, want 1..%d then its end", id, seqs, last[id])
		}
	}
	if len(whole) == 0 {
		t.Log("no session was saved whole")
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(waitLimit); code != 0 {
		t.Fatalf("tether serve on the recovered data exited %d:\n%s", code, p.log())
	}
}

// The command on a directory whose stores are whole leaves them alone;
// on a store in use it refuses.
func TestRecoverLeavesWholeStoresAndStoresInUse(t *testing.T) {
	data, _ := populated(t)
	before, _ := os.ReadFile(filepath.Join(data, "events.db"))
	r := tether(t, data, "", cleanEnv(), "recover", "--data", data, "--replace")
	if r.code != 0 || strings.Count(r.stdout, "not damaged (left alone)") != 2 {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(data, "events.db")); !bytes.Equal(before, after) {
		t.Fatal("a whole store changed")
	}
	s, err := approvals.Open(filepath.Join(data, "approvals.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r = tether(t, data, "", cleanEnv(), "recover", "--data", data)
	if r.code != 1 || !strings.Contains(r.stderr, "approvals.db is in use: stop the tether that runs on") {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := tether(t, data, "", cleanEnv(), "recover"); r.code != 2 || !strings.Contains(r.stderr, "--data is required") {
		t.Fatalf("no --data: exit %d: %s", r.code, r.stderr)
	}
}
