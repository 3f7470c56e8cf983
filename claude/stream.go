package claude

import (
	"iter"
	"strings"
)

// TextDeltas yields assistant text as it streams: the text_delta events when
// partial messages are on, else each assistant message's text.
func TextDeltas(msgs iter.Seq2[Message, error]) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		streamed := false
		for msg, err := range msgs {
			if err != nil {
				yield("", err)
				return
			}
			switch m := msg.(type) {
			case *StreamEvent:
				if d, ok := m.TextDelta(); ok && m.ParentToolUseID == nil {
					streamed = true
					if !yield(d, nil) {
						return
					}
				}
			case *AssistantMessage:
				if streamed || m.ParentToolUseID != nil {
					continue
				}
				if t := m.Message.Content.Text(); t != "" && !yield(t, nil) {
					return
				}
			case *ResultMessage:
				streamed = false
			}
		}
	}
}

// ToolUses yields every tool call the model makes.
func ToolUses(msgs iter.Seq2[Message, error]) iter.Seq2[ToolUseBlock, error] {
	return func(yield func(ToolUseBlock, error) bool) {
		for msg, err := range msgs {
			if err != nil {
				yield(ToolUseBlock{}, err)
				return
			}
			if m, ok := msg.(*AssistantMessage); ok {
				for _, tu := range m.Message.Content.ToolUses() {
					if !yield(tu, nil) {
						return
					}
				}
			}
		}
	}
}

// FinalResult drains msgs and returns the last result. A failed turn comes
// back with a *ResultError; output that ends without one, ErrNoResult.
func FinalResult(msgs iter.Seq2[Message, error]) (*ResultMessage, error) {
	var last *ResultMessage
	for msg, err := range msgs {
		if err != nil {
			return last, err
		}
		if r, ok := msg.(*ResultMessage); ok {
			last = r
		}
	}
	if last == nil {
		return nil, ErrNoResult
	}
	return last, ResultErr(last)
}

// Text drains msgs and returns all assistant text of the main thread.
func Text(msgs iter.Seq2[Message, error]) (string, error) {
	var b strings.Builder
	for msg, err := range msgs {
		if err != nil {
			return b.String(), err
		}
		if m, ok := msg.(*AssistantMessage); ok && m.ParentToolUseID == nil {
			b.WriteString(m.Message.Content.Text())
		}
	}
	return b.String(), nil
}
