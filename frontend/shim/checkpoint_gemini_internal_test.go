package shim

import "testing"

// A kind whose checkpoint tag is gemini (Gemini CLI) checkpoints as the
// backend's gemini member: its session id, no runStateJson; and a resume
// from that checkpoint continues the same session.
func TestCheckpointGemini(t *testing.T) {
	s := &Server{cfg: Config{Agent: "gemini", CheckpointSDK: "gemini"}}
	cp := s.checkpointOf("native-1", 3)
	if cp.SDK != "gemini" || cp.SessionID != "native-1" || cp.RunStateJSON != "" || cp.StateSnapshot["turns"] != 3 {
		t.Fatalf("checkpoint %+v", cp)
	}
	native, _, err := resumePoint(SerializedAgentState{Checkpoint: cp})
	if err != nil || native != "native-1" {
		t.Fatalf("resume point %q %v", native, err)
	}
	if cp := (&Server{cfg: Config{Agent: "opencode-acp", CheckpointSDK: "openai"}}).checkpointOf("n", 1); cp.SDK != "openai" || cp.RunStateJSON == "" {
		t.Fatalf("an openai-tagged kind: %+v", cp)
	}
}
