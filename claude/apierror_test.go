package claude

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testing/testenv"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// lastResult reads a real CLI transcript and returns its result message.
func lastResult(t *testing.T, name string) *ResultMessage {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.SharedDir(t), "transcripts", "claude", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var res *ResultMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		msg, err := cc.Parse(bytes.Clone(sc.Bytes()))
		if err != nil {
			continue
		}
		if r, ok := msg.(*ResultMessage); ok {
			res = r
		}
	}
	if res == nil {
		t.Fatalf("%s has no result", name)
	}
	return res
}

// The real CLI reports a failed API call as subtype "success" with
// is_error: ResultErr types it as an API error with its status and words.
func TestResultErrTypesAPIErrors(t *testing.T) {
	for name, want := range map[string]APIError{
		"d-print-api-error-400.stdout.jsonl":       {Status: 400, Message: "fake invalid_request_error"},
		"d-print-api-error-500-retry.stdout.jsonl": {Status: 500, Message: "fake api_error. This is a server-side issue"},
	} {
		t.Run(name, func(t *testing.T) {
			err := ResultErr(lastResult(t, name))
			var api *APIError
			if !errors.As(err, &api) || !errors.Is(err, ErrAPI) {
				t.Fatalf("ResultErr = %#v, want an *APIError", err)
			}
			if api.Status != want.Status || !strings.HasPrefix(api.Message, want.Message) {
				t.Errorf("got %d %q, want %d %q…", api.Status, api.Message, want.Status, want.Message)
			}
			if strings.Contains(err.Error(), "success") {
				t.Errorf("the message names the misleading subtype: %v", err)
			}
		})
	}
	// A failure that is not the API's stays a *ResultError.
	max := &ResultMessage{}
	max.Subtype, max.IsError, max.Errors = "error_max_turns", true, []string{"Reached maximum number of turns (3)"}
	var re *ResultError
	if err := ResultErr(max); !errors.As(err, &re) || errors.Is(err, ErrAPI) || re.Message != "Reached maximum number of turns (3)" {
		t.Errorf("ResultErr(max turns) = %#v", err)
	}
}
