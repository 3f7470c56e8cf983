package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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

// A refusal says why, and what to do instead where there is something.
func TestRunnerOptionsRefusedSayWhy(t *testing.T) {
	for _, tc := range []struct {
		set  func(*claude.Options)
		want string
	}{
		{func(o *claude.Options) { o.Cwd = "/home/me/project" }, `Cwd "/home/me/project" is a path on this machine; with a runner, Cwd is a directory relative to the session's workspace`},
		{func(o *claude.Options) { o.Cwd = "../other" }, `Cwd "../other" is a path on this machine`},
		{func(o *claude.Options) { o.CLIPath = "/usr/bin/claude" }, "CLIPath cannot be used with a runner: the runner runs its own claude executable (tether serve --cli)"},
		{func(o *claude.Options) { o.Env = map[string]string{"A": "b"} }, "Env cannot be used with a runner: the agent's environment is the runner's"},
	} {
		opts := claude.Options{Runner: &claude.RunnerOptions{URL: "ws://127.0.0.1:1/sessions", WorkspaceID: "w"}}
		tc.set(&opts)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := claude.Connect(ctx, opts)
		cancel()
		if !errors.Is(err, claude.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v\nwant it to say %q", err, tc.want)
		}
	}
}
