package claudecode

import (
	"bytes"
	"errors"

	segjson "github.com/segmentio/encoding/json"
)

// decode unmarshals a whole JSON value into v. It uses segmentio/encoding,
// a drop-in decoder several times faster than encoding/json, with ZeroCopy:
// strings without escapes and raw values alias data instead of copying it.
// A message owns its line (Raw) and nobody modifies it, so a 50 MB line
// costs 50 MB, not a copy per decoding layer.
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
