package fakehttp

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strings"
)

// Image is an image a model request carried, decoded.
type Image struct {
	MediaType string
	Data      []byte
}

// DataURLImage reads a data: URL of base64 bytes ("data:image/png;base64,…").
func DataURLImage(url string) (Image, bool) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return Image{}, false
	}
	mediaType, data, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return Image{}, false
	}
	return Base64Image(mediaType, data)
}

// Base64Image is an image of data in standard base64.
func Base64Image(mediaType, data string) (Image, bool) {
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return Image{}, false
	}
	return Image{MediaType: mediaType, Data: raw}, true
}

// AddImage appends img to images unless it is there already: each request
// repeats the conversation's images.
func AddImage(images []Image, img Image) []Image {
	if slices.ContainsFunc(images, func(i Image) bool { return i.MediaType == img.MediaType && bytes.Equal(i.Data, img.Data) }) {
		return images
	}
	return append(images, img)
}

// OnePixelPNGBase64 is a 1x1 PNG in base64: a picture any model and CLI
// reads as one, for tests that send an image.
const OnePixelPNGBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

// OnePixelPNG is OnePixelPNGBase64's bytes.
func OnePixelPNG() []byte {
	data, err := base64.StdEncoding.DecodeString(OnePixelPNGBase64)
	if err != nil {
		panic("fakehttp: OnePixelPNGBase64 is not base64: " + err.Error()) // a constant: never
	}
	return data
}
