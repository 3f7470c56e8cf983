package codexapp

import (
	"bytes"
	"encoding/json"
	"errors"

	segjson "github.com/segmentio/encoding/json"
)

// decode unmarshals a whole JSON value into v with segmentio/encoding in
// ZeroCopy mode: strings without escapes and raw values alias data instead
// of copying it. data must not be modified while the decoded values live.
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

// marshal encodes v as one line: standard encoding/json (for omitzero and
// Marshaler support) without HTML escaping and without a newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
