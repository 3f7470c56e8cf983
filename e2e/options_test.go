package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
)

// Options a runner session cannot honour are refused before anything is
// dialled, never silently dropped (a dropped ForkSession would resume the
// original conversation instead of forking it).
func TestRunnerOptionsRefused(t *testing.T) {
	cases := map[string]func(*claude.Options){
		"CLIPath":                         func(o *claude.Options) { o.CLIPath = "/bin/claude" },
		"Env":                             func(o *claude.Options) { o.Env = map[string]string{"A": "b"} },
		"Settings":                        func(o *claude.Options) { o.Settings = "{}" },
		"SettingSources":                  func(o *claude.Options) { o.SettingSources = []string{"project"} },
		"ForkSession":                     func(o *claude.Options) { o.Resume, o.ForkSession = "s", true },
		"SessionID":                       func(o *claude.Options) { o.SessionID = "0b9b0b8e-7a4c-4d1e-9a77-5f0f3c1f2a10" },
		"ResumeSessionAt":                 func(o *claude.Options) { o.Resume, o.ResumeSessionAt = "s", "m" },
		"JSONSchema":                      func(o *claude.Options) { o.JSONSchema = json.RawMessage(`{"type":"object"}`) },
		"Thinking":                        func(o *claude.Options) { o.Thinking = &claude.Thinking{Type: "adaptive"} },
		"EnableFileCheckpointing":         func(o *claude.Options) { o.EnableFileCheckpointing = true },
		"AllowDangerouslySkipPermissions": func(o *claude.Options) { o.AllowDangerouslySkipPermissions = true },
	}
	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			// Nothing listens there: a refusal must come first.
			opts := claude.Options{Runner: &claude.RunnerOptions{URL: "ws://127.0.0.1:1/sessions", WorkspaceID: "w", ConnectTimeout: time.Second}}
			set(&opts)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := claude.Connect(ctx, opts)
			if !errors.Is(err, claude.ErrInvalidOptions) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}
