package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/tetherhq/tether/runner/auth"
)

// runnerToken picks the token `tether run --runner URL` sends: --runner-token,
// then TETHER_AUTH_TOKEN, then the token a runner on this machine generated
// for URL's port (auth.LocalToken). A local token that was found but cannot
// be used is said on stderr; without any token the runner answers 401.
func runnerToken(flagToken, runnerURL string, getenv func(string) string, stderr io.Writer) string {
	if flagToken != "" {
		return flagToken
	}
	if tok := getenv(auth.EnvToken); tok != "" {
		return tok
	}
	tok, err := auth.LocalToken("", runnerURL)
	if err != nil && !errors.Is(err, auth.ErrNoLocalToken) {
		fmt.Fprintln(stderr, "tether:", err)
	}
	return tok
}
