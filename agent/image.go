package agent

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Image is a picture a prompt carries: its media type and its bytes
// (base64 in JSON).
type Image struct {
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
}

// MaxImageBytes bounds one image's decoded size: the Anthropic API's
// limit, the smallest among the models the agents use.
const MaxImageBytes = 5 << 20

// ImageMediaTypes are the media types a prompt's image may have: those
// every model behind the agents takes.
func ImageMediaTypes() []string {
	return []string{"image/png", "image/jpeg", "image/gif", "image/webp"}
}

// ErrInvalidImage matches an *InvalidImageError.
var ErrInvalidImage = errors.New("agent: invalid image")

// InvalidImageError refuses one of a prompt's images: Index is its place
// among Prompt.Images.
type InvalidImageError struct {
	Index     int
	MediaType string
	Reason    string
}

func (e *InvalidImageError) Error() string {
	return fmt.Sprintf("agent: image %d (%s): %s", e.Index, e.MediaType, e.Reason)
}

func (e *InvalidImageError) Is(target error) bool { return target == ErrInvalidImage }

// Validate checks one image: a media type the models take, some bytes,
// and no more than MaxImageBytes.
func (img Image) Validate() error {
	switch {
	case !slices.Contains(ImageMediaTypes(), img.MediaType):
		return &InvalidImageError{MediaType: img.MediaType, Reason: fmt.Sprintf("media type %q is not one of %s", img.MediaType, strings.Join(ImageMediaTypes(), ", "))}
	case len(img.Data) == 0:
		return &InvalidImageError{MediaType: img.MediaType, Reason: "no data"}
	case len(img.Data) > MaxImageBytes:
		return &InvalidImageError{MediaType: img.MediaType, Reason: fmt.Sprintf("%d bytes, over the %d a model takes", len(img.Data), MaxImageBytes)}
	}
	return nil
}

// ValidateImages checks each of the prompt's images.
func (p Prompt) ValidateImages() error {
	for i, img := range p.Images {
		if err := img.Validate(); err != nil {
			var bad *InvalidImageError
			if errors.As(err, &bad) {
				bad.Index = i
			}
			return err
		}
	}
	return nil
}

// CheckImages is what a driver does with a prompt's images before it
// sends them: an agent that takes none refuses them with an
// *UnsupportedError, and one that does checks them.
func CheckImages(agentName string, caps Capabilities, p Prompt) error {
	if len(p.Images) == 0 {
		return nil
	}
	if !caps.Images {
		return &UnsupportedError{Agent: agentName, Capability: "take images in a prompt"}
	}
	return p.ValidateImages()
}
