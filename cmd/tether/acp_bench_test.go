package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// BenchmarkACPSessionNewClaude is session/new to its answer with the real
// Claude Code behind tether acp (against the fake Anthropic API), against
// the CLI's own start through the SDK (spawn to its initialize answer),
// one after the other in each round. Reported: the p50 of each and of
// what tether acp adds.
func BenchmarkACPSessionNewClaude(b *testing.B) {
	cli := testenv.RequireClaudeCLI(b)
	fake, err := fakeanthropic.Start(fakeanthropic.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fake.Close() })
	home := b.TempDir()
	env := append(testenv.ClaudeEnv(home, fake.URL()), "XDG_STATE_HOME="+b.TempDir())
	c := startACP(b, env, "--agent", "claude", "--data-dir", filepath.Join(b.TempDir(), "acp"), "--cli", cli)
	root := b.TempDir()
	ctx := context.Background()
	var viaACP, own []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cwd := filepath.Join(root, "w"+strconv.Itoa(i))
		if err := os.Mkdir(cwd, 0o755); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		s, err := c.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
		if err != nil {
			b.Fatalf("session/new: %v\n%s", err, c.Stderr.String())
		}
		viaACP = append(viaACP, time.Since(start))
		if _, err := c.CloseSession(ctx, acp.CloseSessionRequest{SessionId: s.SessionId}); err != nil {
			b.Fatal(err)
		}

		start = time.Now()
		direct, err := claude.Connect(ctx, claude.Options{CLIPath: cli, Cwd: cwd, ReplaceEnv: true, Env: envMap(env)})
		if err != nil {
			b.Fatal(err)
		}
		own = append(own, time.Since(start))
		_ = direct.Close()
	}
	b.StopTimer()
	slices.Sort(viaACP)
	slices.Sort(own)
	p50 := func(d []time.Duration) float64 { return float64(d[len(d)/2].Microseconds()) / 1e3 }
	b.ReportMetric(p50(viaACP), "acp-p50-ms")
	b.ReportMetric(p50(own), "cli-p50-ms")
	b.ReportMetric(p50(viaACP)-p50(own), "added-ms")
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
