package claudecli

import (
	"bytes"

	"github.com/tetherhq/tether/sandbox"
)

// wrappedMarker is sandbox.WrappedMarker as bytes, for the per-line check.
var wrappedMarker = []byte(sandbox.WrappedMarker)

// unwrap returns line with every sandboxed command this rewriter made put
// back as the model's own command, or line itself when it holds none.
// Lines without the marker (nearly all) cost one substring search.
//
// The CLI hands the rewritten input on wherever a tool call is described
// after the PreToolUse hook: can_use_tool requests, later hooks' inputs,
// a result's permission_denials. The host must see the command the model
// asked for there, never the wrapper.
func (b *bashRewriter) unwrap(line []byte) []byte {
	if b == nil || !bytes.Contains(line, wrappedMarker) {
		return line
	}
	if out, ok := b.replaceEncoded(line); ok {
		return out
	}
	return b.replaceDecoded(line)
}

// replaceEncoded replaces each wrapped command as it stands JSON-encoded in
// the line, keeping every other byte. It reports false when the marker is
// there but no command matched as encoded (the CLI escaped it otherwise).
func (b *bashRewriter) replaceEncoded(line []byte) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out, found := line, false
	for _, w := range b.produced {
		if bytes.Contains(out, w.wrappedJSON) {
			out, found = bytes.ReplaceAll(out, w.wrappedJSON, w.origJSON), true
		}
	}
	return out, found
}

// replaceDecoded is the slow path: decode the line, put back every string
// that is a wrapped command, and encode it again (keys then come sorted).
// A line that is not JSON, or holds no wrapped command, is returned as is.
func (b *bashRewriter) replaceDecoded(line []byte) []byte {
	msg, err := decodeLine(line)
	if err != nil {
		return line
	}
	if !b.restore(msg) {
		return line
	}
	out, err := encodeLine(msg)
	if err != nil {
		return line
	}
	return out
}

// restore replaces, at any depth, strings that are wrapped commands; it
// reports whether it replaced any.
func (b *bashRewriter) restore(v any) bool {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if s, ok := b.restoreChild(child); ok {
				v[k], changed = s, true
			}
		}
	case []any:
		for i, child := range v {
			if s, ok := b.restoreChild(child); ok {
				v[i], changed = s, true
			}
		}
	}
	return changed
}

// restoreChild returns the model's command for a wrapped command string,
// or restores a container in place (returning it).
func (b *bashRewriter) restoreChild(child any) (any, bool) {
	if s, ok := child.(string); ok {
		return b.original(s)
	}
	return child, b.restore(child)
}

func (b *bashRewriter) original(s string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, ok := b.produced[s]
	return w.original, ok
}
