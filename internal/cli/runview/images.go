package runview

import (
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/tetherhq/tether/agent"
)

// ReadImages reads the image files a prompt carries (tether run --image).
// Each one's media type is sniffed from its bytes; a file that is not an
// image the agents take, or is too big, is an *agent.InvalidImageError
// naming the file.
func ReadImages(paths []string) ([]agent.Image, error) {
	var out []agent.Image
	for i, path := range paths {
		info, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("--image %s: %w", path, err)
		}
		if info.Size() > agent.MaxImageBytes {
			return nil, fmt.Errorf("--image %s: %w", path, &agent.InvalidImageError{Index: i,
				Reason: fmt.Sprintf("%d bytes, over the %d an image may have", info.Size(), agent.MaxImageBytes)})
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--image %s: %w", path, err)
		}
		img := agent.Image{MediaType: http.DetectContentType(data), Data: data}
		if err := img.Validate(); err != nil {
			var bad *agent.InvalidImageError
			if errors.As(err, &bad) {
				bad.Index = i
			}
			return nil, fmt.Errorf("--image %s: %w", path, err)
		}
		out = append(out, img)
	}
	return out, nil
}
