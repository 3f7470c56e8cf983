package workspace

import "fmt"

// MaxIDLength is the longest workspace id, in bytes.
const MaxIDLength = 128

// ValidateID accepts ids made of [A-Za-z0-9._-], 1 to MaxIDLength bytes,
// not starting with '.' or '-'. That rules out path traversal ("..", "a/b"),
// hidden and reserved names, ids that read as flags, and every control
// character. The error is an *InvalidIDError.
func ValidateID(id string) error {
	bad := func(reason string) error { return &InvalidIDError{ID: id, Reason: reason} }
	switch {
	case id == "":
		return bad("empty")
	case len(id) > MaxIDLength:
		return bad(fmt.Sprintf("longer than %d bytes", MaxIDLength))
	case id[0] == '.':
		return bad("starts with '.'")
	case id[0] == '-':
		return bad("starts with '-'")
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		case c == '/' || c == '\\':
			return bad("contains a path separator")
		case c < 0x20 || c == 0x7f:
			return bad("contains a control character")
		case c >= 0x80:
			return bad("contains a non-ASCII byte")
		default:
			return bad(fmt.Sprintf("contains %q; only letters, digits, '.', '_' and '-' are allowed", rune(c)))
		}
	}
	return nil
}
