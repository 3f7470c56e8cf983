package claude

import (
	"regexp"
	"slices"
	"testing"

	"github.com/tetherhq/tether/transport"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// The session id is pinned before the CLI starts wherever the SDK can know
// it, and left to the CLI where something else picks the session.
func TestPinSessionID(t *testing.T) {
	const given, resumed = "0b9b0b8e-7a4c-4d1e-9a77-5f0f3c1f2a10", "5b6a3f0e-3c1d-4a8e-9f7b-2d1c0e9a8b7c"
	cases := []struct {
		name string
		opts Options
		want string // "new": a fresh UUID passed as --session-id
	}{
		{"New", Options{}, "new"},
		{"Given", Options{SessionID: given}, given},
		{"Resume", Options{Resume: resumed}, resumed},
		{"Fork", Options{Resume: resumed, ForkSession: true}, "new"},
		{"Continue", Options{Continue: true}, ""},
		{"ExtraArgsResume", Options{ExtraArgs: []string{"--resume=" + resumed}}, ""},
		{"CustomTransport", Options{Transport: transport.NewMemory()}, ""},
		{"Runner", Options{Runner: &RunnerOptions{}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			got := o.pinSessionID()
			switch {
			case tc.want == "new":
				if !uuidV4.MatchString(got) || o.SessionID != got {
					t.Fatalf("got %q, SessionID %q: want a fresh UUID passed to the CLI", got, o.SessionID)
				}
				args, err := o.CommandArgs()
				if err != nil || !slices.Contains(args, "--session-id="+got) {
					t.Fatalf("args %v (%v) do not pass it", args, err)
				}
			case got != tc.want:
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	a, b := Options{}, Options{}
	if a.pinSessionID() == b.pinSessionID() {
		t.Fatal("two new sessions got the same id")
	}
}
