package claudecode

import (
	"bytes"
	"errors"

	segjson "github.com/segmentio/encoding/json"
)

// decode unmarshals a whole JSON value into v. It uses segmentio/encoding,
// a drop-in decoder several times faster than encoding/json, with strings
// aliasing data (see the package doc: a message owns its line).
func decode(data []byte, v any) error {
	rest, err := segjson.Parse(data, v, segjson.ZeroCopy)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return errTrailingData
	}
	return nil
}

var errTrailingData = errors.New("invalid character after top-level value")
