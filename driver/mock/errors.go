package mock

import (
	"errors"
	"fmt"
)

var (
	// ErrUnknownConversation: a resume named no conversation of this Driver.
	ErrUnknownConversation = errors.New("mock: no such conversation")
	// ErrConversationInUse: a resume named a conversation another open
	// session holds.
	ErrConversationInUse = errors.New("mock: the conversation is in use by another session")
	// ErrBadOptions: StartRequest.Options the mock does not take.
	ErrBadOptions = errors.New("mock: bad options")
	// ErrBadAnswer: a resolution that does not fit its approval (a
	// question answered with an option it does not offer).
	ErrBadAnswer = errors.New("mock: bad answer")
)

// ConversationError names the conversation a resume could not take.
type ConversationError struct {
	NativeID string
	Err      error // ErrUnknownConversation or ErrConversationInUse
}

func (e *ConversationError) Error() string { return fmt.Sprintf("%v: %s", e.Err, e.NativeID) }
func (e *ConversationError) Unwrap() error { return e.Err }
