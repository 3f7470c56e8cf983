package e2e

import (
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/runner/sessions"
)

// scrapeMetrics reads the runner's /metrics with its token.
func (r *agentRunner) scrapeMetrics(t *testing.T) string {
	t.Helper()
	req, _ := http.NewRequest("GET", r.api.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+r.api.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	return string(body)
}

// metricValue is one series' value, by its exact name and sorted labels;
// -1 when absent.
func metricValue(body, series string) float64 {
	for line := range strings.Lines(body) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			if v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64); err == nil {
				return v
			}
		}
	}
	return -1
}

// The runner's metrics follow the real Claude Code CLI: a started agent,
// a turn's events and their delivery to a live client, and, once the CLI
// is killed with SIGKILL (as the OOM killer would), a crash with the
// signal as its exit code.
func TestRealCLIMetricsFollowClaudeCode(t *testing.T) {
	timed(t)
	r := startAgentRunner(t, "claude", false)
	ws := newWorkspaceID("metrics")
	var info sessions.Info
	if code := r.api.call("POST", "/v1/sessions", `{"agent":"claude","workspace_id":"`+ws+`"}`, &info, ""); code != 201 {
		t.Fatalf("create: %d\n%s", code, r.logs.String())
	}
	events := r.api.stream("/v1/sessions/" + info.ID + "/events")
	untilKind(t, events, agent.KindSessionStarted)
	r.turn(t, info.ID, events, "SAY hello to the metrics", "")
	body := r.scrapeMetrics(t)
	for series, least := range map[string]float64{
		`tether_agent_starts_total{agent="claude",result="ok"}`:                        1,
		`tether_events_total{agent="claude",kind="turn.completed"}`:                    1,
		`tether_events_total{agent="claude",kind="item.delta"}`:                        1,
		`tether_event_delivery_seconds_count{agent="claude",front_end="sessions_api"}`: 3,
		`tether_sessions{agent="claude",state="idle"}`:                                 1,
	} {
		if got := metricValue(body, series); got < least {
			t.Errorf("%s = %v, want at least %v", series, got, least)
		}
	}
	if got := metricValue(body, `tether_agent_crashes_total{agent="claude"}`); got != 0 {
		t.Errorf("crashes before any: %v", got)
	}

	// The CLI runs with the workspace's private home: that finds it.
	home := "HOME=" + filepath.Join(r.Data, "homes", ws)
	pids := testenv.PIDsWithEnv(home)
	if len(pids) == 0 {
		t.Fatalf("no process with %s", home)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	ended := untilKind(t, events, agent.KindSessionEnded)
	if ended.Session.Reason != "exited" {
		t.Fatalf("session.ended %+v %+v", ended.Session, ended.Error)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		body = r.scrapeMetrics(t)
		if metricValue(body, `tether_agent_crashes_total{agent="claude"}`) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no crash counted:\n%s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := metricValue(body, `tether_agent_exits_total{agent="claude",code="signal SIGKILL",reason="exited"}`); got != 1 {
		t.Errorf("exits by SIGKILL = %v (session.ended error %+v)", got, ended.Error)
	}
}
