package workspace_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tetherhq/tether/runner/workspace"
)

func TestValidateID(t *testing.T) {
	good := []string{"agent_abc123", "a", "A-b.c_d", "x..y", "9", strings.Repeat("a", workspace.MaxIDLength)}
	for _, id := range good {
		if err := workspace.ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v", id, err)
		}
	}
	bad := []string{
		"", ".", "..", "../x", "..\\x", "a/b", "a\\b", "/abs", "x/..",
		"\x00", "a\x00b", "\n", "a\nb", "\t", "\x7f", "a b",
		"-rf", "--help", ".git", ".tether", ".hidden",
		strings.Repeat("a", workspace.MaxIDLength+1), strings.Repeat("x", 200),
		"é", "a:b", "a*", "$(id)", "~root",
	}
	for _, id := range bad {
		err := workspace.ValidateID(id)
		var ie *workspace.InvalidIDError
		if !errors.Is(err, workspace.ErrInvalidID) || !errors.As(err, &ie) || ie.ID != id || ie.Reason == "" {
			t.Errorf("ValidateID(%q) = %v", id, err)
		}
	}
}
