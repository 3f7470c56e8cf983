package acp_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/frontend/acp"
	"github.com/tetherhq/tether/frontend/sessionsapi"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

// rig is Serve over pipes, in front of a real core with the mock agent,
// and a Go SDK client that picks a permission option by its kind (or,
// for a question, the option named pick).
type rig struct {
	conn *acpsdk.ClientSideConnection
	root string

	core *sessions.Manager

	mu      sync.Mutex
	updates []acpsdk.SessionUpdate
	times   []time.Time // of updates
	asked   []acpsdk.RequestPermissionRequest
	pick    string
}

func newRig(t testing.TB, mc mock.Config) *rig { return newRigOver(t, mc, false) }

// newRigOver is newRig with the front end's core the sessions API over
// loopback HTTP (a runner) when remote is set.
func newRigOver(t testing.TB, mc mock.Config, remote bool) *rig {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "work")
	ws, err := workspace.New(root, workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		t.Fatal(err)
	}
	elog, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := approvals.Open(filepath.Join(dir, "approvals.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sessions.New(sessions.Config{Drivers: map[string]agent.Driver{"mock": mock.New(mc)},
		Workspaces: ws, Log: elog, Approvals: store, IndexDir: filepath.Join(dir, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	cr, cw := io.Pipe()
	ar, aw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	cfg := acp.Config{Agent: "mock", Capabilities: mock.New(mock.Config{}).Capabilities(),
		Open: func(context.Context, string) (acp.Core, error) { return m, nil }}
	if remote {
		mux := http.NewServeMux()
		mux.Handle("/v1/", sessionsapi.Handler(sessionsapi.Config{Sessions: m}))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		rc := acp.NewRemoteCore(&client.Client{BaseURL: srv.URL})
		cfg.Open = func(context.Context, string) (acp.Core, error) { return rc, nil }
	}
	go func() { served <- acp.Serve(ctx, cfg, cr, aw) }()
	r := &rig{root: ws.Root(), core: m}
	r.conn = acpsdk.NewClientSideConnection(r, cw, ar)
	r.conn.SetLogger(slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		cw.Close()
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		aw.Close()
		<-r.conn.Done()
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = m.Shutdown(sctx)
		store.Close()
		elog.Close()
	})
	if _, err := r.conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) RequestPermission(_ context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, p)
	for _, o := range p.Options {
		if string(o.Kind) == r.pick || o.Name == r.pick {
			return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{
				Selected: &acpsdk.RequestPermissionOutcomeSelected{OptionId: o.OptionId, Outcome: "selected"}}}, nil
		}
	}
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{
		Cancelled: &acpsdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}, nil
}

func (r *rig) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, n.Update)
	r.times = append(r.times, time.Now())
	return nil
}

var errNo = errors.New("not offered")

func (r *rig) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, errNo
}
func (r *rig) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, errNo
}
func (r *rig) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, errNo
}
func (r *rig) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, errNo
}
func (r *rig) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, errNo
}
func (r *rig) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, errNo
}
func (r *rig) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, errNo
}

func (r *rig) take() ([]acpsdk.SessionUpdate, []acpsdk.RequestPermissionRequest) {
	u, a, _ := r.takeTimed()
	return u, a
}

// takeTimed is take with the time each update came.
func (r *rig) takeTimed() ([]acpsdk.SessionUpdate, []acpsdk.RequestPermissionRequest, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, a, at := r.updates, r.asked, r.times
	r.updates, r.asked, r.times = nil, nil, nil
	return u, a, at
}

func (r *rig) turn(t testing.TB, id acpsdk.SessionId, words string) acpsdk.StopReason {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := r.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: id, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(words)}})
	if err != nil {
		t.Fatalf("%s: %v", words, err)
	}
	return resp.StopReason
}

// A file change of a later turn shows as a diff whose old text is the
// file before the turn, taken back from the agent's unified diff.
func TestDiffOldAndNewText(t *testing.T) {
	r := newRig(t, mock.Config{})
	cwd := filepath.Join(r.root, "proj")
	s, err := r.conn.NewSession(context.Background(), acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	r.turn(t, s.SessionId, "first")
	before, err := os.ReadFile(filepath.Join(cwd, "mock-notes.md"))
	if err != nil {
		t.Fatal(err)
	}
	r.take()
	if stop := r.turn(t, s.SessionId, "second"); stop != acpsdk.StopReasonEndTurn {
		t.Fatalf("stop %q", stop)
	}
	after, _ := os.ReadFile(filepath.Join(cwd, "mock-notes.md"))
	updates, _ := r.take()
	var diff *acpsdk.ToolCallContentDiff
	for _, u := range updates {
		if u.ToolCallUpdate != nil {
			for _, c := range u.ToolCallUpdate.Content {
				if c.Diff != nil {
					diff = c.Diff
				}
			}
		}
	}
	if diff == nil || diff.OldText == nil || *diff.OldText != string(before) || diff.NewText != string(after) || diff.Path != filepath.Join(cwd, "mock-notes.md") {
		t.Fatalf("diff %+v, want old %q new %q", diff, before, after)
	}
}

// A question that takes one answer is put as one option per choice; the
// choice comes back in the reply.
func TestQuestionAsOptions(t *testing.T) {
	r := newRig(t, mock.Config{})
	s, err := r.conn.NewSession(context.Background(), acpsdk.NewSessionRequest{Cwd: filepath.Join(r.root, "q"), McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.pick = "Green"
	r.mu.Unlock()
	r.turn(t, s.SessionId, "ASK_QUESTION")
	updates, asked := r.take()
	if len(asked) != 1 || len(asked[0].Options) < 2 {
		t.Fatalf("asked %+v", asked)
	}
	var reply strings.Builder
	for _, u := range updates {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			reply.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
	}
	if !strings.Contains(reply.String(), "Green") {
		t.Fatalf("the choice is not in the reply %q", reply.String())
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func sessionsCreate(ws string) sessions.CreateRequest {
	return sessions.CreateRequest{Agent: "mock", WorkspaceID: ws}
}
