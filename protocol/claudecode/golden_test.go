package claudecode_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testing/testenv"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// cliLines returns every line the real CLI printed in one capture file.
func cliLines(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		if strings.HasSuffix(path, ".stdout.jsonl") {
			out = append(out, line)
			continue
		}
		var rec struct {
			Dir string          `json:"dir"`
			Msg json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if rec.Dir == "<" {
			out = append(out, rec.Msg)
		}
	}
	return out
}

func captures(t *testing.T) []string {
	dir := filepath.Join(testenv.SharedDir(t), "transcripts", "claude")
	var files []string
	for _, pat := range []string{"*.stdout.jsonl", "*.transcript.jsonl"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("expected the claude captures, found %d files", len(files))
	}
	return files
}

// Every assistant and stream_event line the real CLI printed takes the fast
// path and decodes as the general decoder decodes it.
func TestGoldenHotLinesTakeTheFastPath(t *testing.T) {
	n := 0
	for _, f := range captures(t) {
		for i, line := range cliLines(t, f) {
			if typ := cc.PeekType(line); typ != cc.TypeAssistant && typ != cc.TypeStreamEvent {
				continue
			}
			accepted, problem := cc.FastPathAgrees(line)
			if problem != "" {
				t.Fatalf("%s line %d: %s", filepath.Base(f), i+1, problem)
			}
			if !accepted {
				t.Errorf("%s line %d: the fast path declined a real CLI line: %.300s", filepath.Base(f), i+1, line)
			}
			n++
		}
	}
	if n < 10 {
		t.Fatalf("found only %d assistant and stream_event lines in the captures", n)
	}
}

func TestGoldenEveryCapturedLineParses(t *testing.T) {
	var total int
	for _, f := range captures(t) {
		for i, line := range cliLines(t, f) {
			msg, err := cc.Parse(line)
			if err != nil {
				t.Fatalf("%s line %d: %v", filepath.Base(f), i+1, err)
			}
			if !bytes.Equal(msg.Raw(), line) {
				t.Fatalf("%s line %d: raw bytes changed", filepath.Base(f), i+1)
			}
			if u, ok := msg.(*cc.Unknown); ok {
				t.Errorf("%s line %d: known CLI type %q came back unknown", filepath.Base(f), i+1, u.MessageType)
			}
			total++
		}
	}
	if total < 100 {
		t.Fatalf("parsed only %d lines", total)
	}
}

func TestGoldenPrintModeTurn(t *testing.T) {
	path := filepath.Join(testenv.SharedDir(t), "transcripts", "claude", "a-print-say-hi-v2.1.330.stdout.jsonl")
	lines := cliLines(t, path)
	init := mustParse[*cc.SystemMessage](t, lines[0])
	if init.Subtype != cc.SystemInit || init.Model != "claude-sonnet-4-5" || init.ClaudeCodeVersion != "2.1.330" || len(init.Tools) == 0 {
		t.Fatalf("init = %+v", init)
	}
	asst := mustParse[*cc.AssistantMessage](t, lines[1])
	if got := asst.Message.Content.Text(); got != "hi there from fake claude" {
		t.Fatalf("assistant text = %q", got)
	}
	res := mustParse[*cc.ResultMessage](t, lines[2])
	if res.Subtype != cc.ResultSuccess || res.IsError || res.Result != "hi there from fake claude" ||
		res.NumTurns != 1 || res.TotalCostUSD != 0.000141 || res.Usage.OutputTokens != 7 || res.SessionID != init.SessionID {
		t.Fatalf("result = %+v", res)
	}
	if mu := res.ModelUsage["claude-sonnet-4-5"]; mu.CostUSD != 0.000141 {
		t.Fatalf("modelUsage = %+v", res.ModelUsage)
	}
}

func TestGoldenAPIErrorIsSuccessWithIsError(t *testing.T) {
	path := filepath.Join(testenv.SharedDir(t), "transcripts", "claude", "d-print-api-error-400.stdout.jsonl")
	lines := cliLines(t, path)
	res := mustParse[*cc.ResultMessage](t, lines[len(lines)-1])
	if res.Subtype != cc.ResultSuccess || !res.IsError || res.APIErrorStatus == nil || *res.APIErrorStatus != 400 {
		t.Fatalf("result = %+v", res)
	}
	retry := filepath.Join(testenv.SharedDir(t), "transcripts", "claude", "d-print-api-error-500-retry.stdout.jsonl")
	var sawRetry bool
	for _, l := range cliLines(t, retry) {
		if m, _ := cc.Parse(l); m != nil {
			if s, ok := m.(*cc.SystemMessage); ok && s.Subtype == cc.SystemAPIRetry {
				sawRetry = s.ErrorStatus != nil && *s.ErrorStatus == 500 && s.Attempt == 1
			}
		}
	}
	if !sawRetry {
		t.Fatal("no system/api_retry with error_status 500")
	}
}

func TestGoldenControlTraffic(t *testing.T) {
	dir := filepath.Join(testenv.SharedDir(t), "transcripts", "claude")
	lines := cliLines(t, filepath.Join(dir, "b-sdk-tool-write-can_use_tool-allow.transcript.jsonl"))
	initResp := mustParse[*cc.ControlResponse](t, lines[0])
	var ir cc.InitializeResponse
	if err := json.Unmarshal(initResp.Response.Response, &ir); err != nil || len(ir.Commands) == 0 || initResp.Response.Subtype != "success" {
		t.Fatalf("initialize response: %v %+v", err, initResp.Response)
	}
	var req *cc.ControlRequest
	for _, l := range lines {
		if m, _ := cc.Parse(l); m != nil {
			if r, ok := m.(*cc.ControlRequest); ok {
				req = r
			}
		}
	}
	if req == nil || req.Subtype() != cc.SubtypeCanUseTool {
		t.Fatalf("no can_use_tool request, got %+v", req)
	}
	var cut cc.CanUseToolRequest
	if err := req.Decode(&cut); err != nil {
		t.Fatal(err)
	}
	if cut.ToolName != "Write" || cut.ToolUseID != "toolu_fake_7" || len(cut.PermissionSuggestions) != 1 ||
		cut.PermissionSuggestions[0].Mode != "acceptEdits" || !json.Valid(cut.Input) {
		t.Fatalf("can_use_tool = %+v", cut)
	}

	ctl := cliLines(t, filepath.Join(dir, "b-sdk-controls-v2.1.330.transcript.jsonl"))
	var sawUnsupported bool
	for _, l := range ctl {
		if r, ok := mustParseAny(t, l).(*cc.ControlResponse); ok && r.Response.Subtype == "error" {
			sawUnsupported = strings.Contains(r.Response.Error, "Unsupported control request subtype") &&
				r.Response.ErrorCode == "unsupported_request"
		}
	}
	if !sawUnsupported {
		t.Fatal("unsupported subtype error not parsed")
	}
}

func TestGoldenInterruptAndPartialMessages(t *testing.T) {
	dir := filepath.Join(testenv.SharedDir(t), "transcripts", "claude")
	var deltas strings.Builder
	var final *cc.ResultMessage
	var firstAssistant string
	for _, l := range cliLines(t, filepath.Join(dir, "b-sdk-interrupt.transcript.jsonl")) {
		switch m := mustParseAny(t, l).(type) {
		case *cc.StreamEvent:
			if d, ok := m.TextDelta(); ok && final == nil {
				deltas.WriteString(d)
			}
		case *cc.AssistantMessage:
			if firstAssistant == "" {
				firstAssistant = m.Message.Content.Text()
			}
		case *cc.ResultMessage:
			if final == nil {
				final = m
			}
		}
	}
	if final == nil || final.Subtype != cc.ResultErrorDuringExecution || !final.IsError || final.TerminalReason != "aborted_streaming" {
		t.Fatalf("interrupted result = %+v", final)
	}
	if deltas.String() != firstAssistant || firstAssistant == "" {
		t.Fatalf("deltas %q != partial assistant %q", deltas.String(), firstAssistant)
	}
}

func mustParseAny(t *testing.T, line []byte) cc.Message {
	t.Helper()
	m, err := cc.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustParse[T cc.Message](t *testing.T, line []byte) T {
	t.Helper()
	m := mustParseAny(t, line)
	v, ok := m.(T)
	if !ok {
		t.Fatalf("parsed %T, want %T", m, *new(T))
	}
	return v
}
