package deploy

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// repoFile reads a file of the repository by its path from the root.
func repoFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// dockerArgs are the Dockerfile's ARG defaults by name.
func dockerArgs(t *testing.T) map[string]string {
	t.Helper()
	args := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^ARG ([A-Z_]+)=(\S+)$`).FindAllStringSubmatch(repoFile(t, "Dockerfile"), -1) {
		args[m[1]] = m[2]
	}
	return args
}

// The image installs exactly the agent CLI versions the tests run
// (scripts/install-agents) and builds with go.mod's Go.
func TestDockerfilePinsWhatTheTestsRun(t *testing.T) {
	args := dockerArgs(t)
	script := repoFile(t, "scripts/install-agents")
	for _, name := range []string{"CLAUDE_CODE_VERSION", "CODEX_VERSION", "OPENCODE_VERSION"} {
		m := regexp.MustCompile(`(?m)^` + name + `=(\S+)$`).FindStringSubmatch(script)
		if m == nil {
			t.Fatalf("scripts/install-agents sets no %s", name)
		}
		if args[name] != m[1] {
			t.Errorf("Dockerfile ARG %s=%q; scripts/install-agents pins %q", name, args[name], m[1])
		}
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(repoFile(t, "go.mod"))
	if m == nil || args["GO_VERSION"] != m[1] {
		t.Errorf("Dockerfile ARG GO_VERSION=%q; go.mod says go %v", args["GO_VERSION"], m)
	}
}

// The runtime stage runs as an unprivileged user with bubblewrap and git,
// and has a health check.
func TestDockerfileRuntimeStage(t *testing.T) {
	df := repoFile(t, "Dockerfile")
	stages := regexp.MustCompile(`(?m)^FROM `).FindAllStringIndex(df, -1)
	if len(stages) < 2 {
		t.Fatalf("%d stages: the image is built in one and runs from another", len(stages))
	}
	final := df[stages[len(stages)-1][0]:]
	user := regexp.MustCompile(`(?m)^USER (\S+)`).FindStringSubmatch(final)
	if user == nil || strings.HasPrefix(user[1], "root") || strings.HasPrefix(user[1], "0") {
		t.Errorf("the runtime stage's USER is %v: it must not be root", user)
	}
	for _, pkg := range []string{"bubblewrap", "git", "ca-certificates"} {
		if !regexp.MustCompile(`apt-get install[^\n]*\b` + pkg + `\b`).MatchString(final) {
			t.Errorf("the runtime stage installs no %s", pkg)
		}
	}
	for _, want := range []string{"HEALTHCHECK", "COPY --from=build /out/tether", "COPY --from=agents /opt/agents", "VOLUME [\"/var/lib/tether\"]"} {
		if !strings.Contains(final, want) {
			t.Errorf("the runtime stage lacks %q", want)
		}
	}
}

// docker runs the docker CLI with a deadline.
func docker(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// The image builds, runs as a non-root user with bubblewrap, git and the
// pinned CLIs, and turns healthy; where no container engine runs, the
// test says so and skips.
func TestImageBuildsAndTurnsHealthy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: building the image downloads Go modules and npm packages")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI on PATH: the image is not built here")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	if out, err := docker(ctx, "info", "--format", "{{.ServerVersion}}"); err != nil {
		t.Skipf("docker is installed but no container engine answers (docker info: %v: %s): the image is not built here", err, lastLine(out))
	}
	tag := fmt.Sprintf("tether-image-test:%d", os.Getpid())
	if out, err := docker(ctx, "build", "--tag", tag, ".."); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = docker(c, "image", "rm", "--force", tag)
	})
	const token = "image-test-token-0123456789abcdef"
	id, err := docker(ctx, "run", "--detach", "--env", "TETHER_AUTH_TOKEN="+token,
		"--publish", "127.0.0.1::7420", tag, "--addr", "0.0.0.0:7420", "--data", "/var/lib/tether", "--sandbox", "off")
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, id)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = docker(c, "rm", "--force", id)
	})
	for {
		status, err := docker(ctx, "inspect", "--format", "{{.State.Health.Status}}", id)
		if err != nil {
			t.Fatalf("docker inspect: %v: %s", err, status)
		}
		if status == "healthy" {
			break
		}
		if status == "unhealthy" || ctx.Err() != nil {
			logs, _ := docker(context.Background(), "logs", id)
			t.Fatalf("container %s:\n%s", status, logs)
		}
		time.Sleep(time.Second)
	}
	port, err := docker(ctx, "port", id, "7420/tcp")
	if err != nil {
		t.Fatalf("docker port: %v: %s", err, port)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+strings.Split(port, "\n")[0]+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics from the container: %v %v", err, resp)
	}
	resp.Body.Close()
	checks := map[string][]string{
		"id -u":              {"10001"},
		"bwrap --version":    {"bubblewrap"},
		"git --version":      {"git version"},
		"claude --version":   {dockerArgs(t)["CLAUDE_CODE_VERSION"]},
		"codex --version":    {dockerArgs(t)["CODEX_VERSION"]},
		"opencode --version": {dockerArgs(t)["OPENCODE_VERSION"]},
	}
	for cmd, wants := range checks {
		out, err := docker(ctx, append([]string{"exec", id}, strings.Fields(cmd)...)...)
		for _, want := range wants {
			if err != nil || !strings.Contains(out, want) {
				t.Errorf("%s in the container: %v: %q, want %q", cmd, err, out, want)
			}
		}
	}
}

func lastLine(s string) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	return string(lines[len(lines)-1])
}
