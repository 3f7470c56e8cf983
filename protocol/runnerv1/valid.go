package runnerv1

import "github.com/tetherhq/tether/internal/jsonscan"

// maxDepth is the deepest nesting encoding/json accepts.
const maxDepth = 10000

// lineDepth is what a frame leaves a line embedded in it under maxDepth:
// a batch, its frames, the frame.
const lineDepth = maxDepth - 3

// EmbeddableLine reports whether an agent's line may be embedded in a
// frame as is (relay sessions): it is one JSON object, valid as
// encoding/json.Valid sees it and nested shallowly enough that the frame
// around it, in a batch too, stays within encoding/json's limit. Any
// host's decoder then takes the frame. Like encoding/json it does not
// check UTF-8.
func EmbeddableLine(line []byte) bool {
	return len(line) > 1 && line[0] == '{' && jsonscan.Valid(line, lineDepth)
}

// Valid reports whether data is one JSON value, with exactly the answer
// of encoding/json.Valid, but several times faster on the strings that
// make up most of an agent's output: it scans them eight bytes at a time.
func Valid(data []byte) bool { return jsonscan.Valid(data, maxDepth) }
