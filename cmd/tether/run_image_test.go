package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/fakehttp"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// writeImage writes a one-pixel PNG into dir and returns its path.
func writeImage(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	png := fakehttp.OnePixelPNG()
	path := filepath.Join(dir, "pixel.png")
	if err := os.WriteFile(path, png, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, png
}

// --image goes with the prompt to the agent (the mock's reply counts
// what it was sent); a file that is no image the agents take is the
// command line's fault, said before anything starts.
func TestRunImage(t *testing.T) {
	dir := t.TempDir()
	path, png := writeImage(t, dir)
	size := strconv.Itoa(len(png))
	want := "You sent 2 images (image/png " + size + " bytes, image/png " + size + " bytes)."
	p := startServe(t, cleanEnv())
	for where, args := range map[string][]string{"here": nil, "on a runner": {"--runner", "http://" + p.addr, "--runner-token", testToken}} {
		args = append([]string{"run", "--agent", "mock", "--image", path, "--image", path}, args...)
		r := tether(t, dir, "", cleanEnv(), append(args, "look")...)
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("%s: exit code %d, want a reply saying %q\nstdout:\n%s\nstderr:\n%s", where, r.code, want, r.stdout, r.stderr)
		}
	}
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("not a picture"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ path, says string }{
		{notes, "media type"},
		{filepath.Join(dir, "missing.png"), "no such file"},
	} {
		r := tether(t, dir, "", nil, "run", "--agent", "mock", "--image", bad.path, "look")
		if r.code != 2 || !strings.Contains(r.stderr, "--image "+bad.path) || !strings.Contains(r.stderr, bad.says) || r.stdout != "" {
			t.Errorf("--image %s: exit %d, stderr:\n%s\nstdout:\n%s", bad.path, r.code, r.stderr, r.stdout)
		}
	}
}

// --image with the real Claude Code, through the SDK's terminal view and
// through its canonical driver (--json): the model's request carries the
// picture's bytes.
func TestRealCLIRunClaudeImage(t *testing.T) {
	bin := testenv.RequireClaudeCLI(t)
	for name, extra := range map[string][]string{"Terminal": nil, "JSON": {"--json"}} {
		t.Run(name, func(t *testing.T) {
			srv, err := fakeanthropic.Start(fakeanthropic.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			dir := t.TempDir()
			path, png := writeImage(t, dir)
			args := append([]string{"run", "--cli", bin, "--model", "claude-sonnet-4-5", "--image", path}, extra...)
			r := tether(t, dir, "", testenv.ClaudeEnv(t.TempDir(), srv.URL()), append(args, "SAY a pixel")...)
			if r.code != 0 || !strings.Contains(r.stdout, "a pixel") {
				t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			for _, img := range srv.Images() {
				if img.MediaType == "image/png" && bytes.Equal(img.Data, png) {
					return
				}
			}
			t.Fatalf("the model was sent images %+v, not the prompt's", srv.Images())
		})
	}
}
