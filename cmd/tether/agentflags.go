package main

import (
	"fmt"

	"github.com/tetherhq/tether/server"
)

// sandboxOn reads --sandbox, on or off.
func sandboxOn(value string) (bool, error) {
	switch value {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("--sandbox must be on or off, not %q", value)
}

// cliFlags reads the repeatable --cli [NAME=]PATH into the agents' CLIs by
// kind; a kind named twice is a usage error.
func cliFlags(values []string) (map[string]string, error) {
	clis := map[string]string{}
	for _, v := range values {
		kind, path := server.ParseCLIFlag(v)
		if _, dup := clis[kind]; dup {
			return nil, fmt.Errorf("--cli names %s twice", kind)
		}
		clis[kind] = path
	}
	return clis, nil
}
