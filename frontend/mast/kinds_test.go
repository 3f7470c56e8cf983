package mast

import (
	"testing"

	"github.com/tetherhq/tether/driver"
	_ "github.com/tetherhq/tether/driver/all" // the agent kinds, as the daemon has them
)

// Mast's names for the agent kinds come from the registry, both ways:
// Claude Code is "claude-code" on Mast's wire, and create_session takes
// either name; a kind the registry does not know keeps its own.
func TestAgentTypesFromTheRegistry(t *testing.T) {
	if len(driver.Kinds()) == 0 {
		t.Fatal("no agent kind registered")
	}
	for _, k := range driver.Kinds() {
		typ := agentType(k.Name)
		if typ != k.MastName() || agentKind(typ) != k.Name || agentKind(k.Name) != k.Name {
			t.Errorf("%s: agentType %q, read back as %q", k.Name, typ, agentKind(typ))
		}
	}
	if agentType("claude") != "claude-code" || agentKind("claude-code") != "claude" {
		t.Errorf("claude is %q on Mast's wire, claude-code reads as %q", agentType("claude"), agentKind("claude-code"))
	}
	if agentType("echo") != "echo" || agentKind("echo") != "echo" {
		t.Error("a kind the registry does not know changed its name")
	}
}
