package fakehttp

import "encoding/json"

// StringOrList decodes a JSON value that both model APIs take either as a
// plain string or as a list of parts (a message's content): a string
// becomes the one part fromString makes of it, null no parts.
func StringOrList[T any](b []byte, fromString func(string) T) ([]T, error) {
	if string(b) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return []T{fromString(s)}, nil
	}
	var parts []T
	if err := json.Unmarshal(b, &parts); err != nil {
		return nil, err
	}
	return parts, nil
}
