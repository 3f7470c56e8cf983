package agentproc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Where each model API is when its base URL variable is unset.
const (
	AnthropicAPI = "https://api.anthropic.com"
	OpenAIAPI    = "https://api.openai.com/v1"
)

// ReadOptional reads one of the runner's own configuration files; a
// missing file is nil, not an error.
func ReadOptional(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return b, nil
}
