package server_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/server"
)

// withToken is a Config whose hosts authenticate with tokenA.
func withToken(cfg server.Config) server.Config {
	cfg.Auth = auth.LoadOptions{Getenv: func(k string) string {
		if k == auth.EnvToken {
			return tokenA
		}
		return ""
	}}
	return cfg
}

// call makes one HTTP request with tokenA and returns status and body.
func call(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tokenA)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// sample is one sample's value in a text exposition, by its exact name
// and labels as Prometheus writes them (labels sorted); absent is -1.
func sample(body, series string) float64 {
	for line := range strings.Lines(body) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), series+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
		if err != nil {
			return -1
		}
		return v
	}
	return -1
}

// scrape reads /metrics with tokenA.
func scrape(t *testing.T, url string) string {
	t.Helper()
	code, body := call(t, "GET", url, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return body
}

// eventually scrapes until series has want, or fails after a while.
func eventually(t *testing.T, url, series string, want float64) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		body := scrape(t, url)
		got := sample(body, series)
		if got == want {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v, want %v; metrics:\n%s", series, got, want, grepTether(body))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func grepTether(body string) string {
	var b strings.Builder
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, "tether_") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// readSSE reads a session's event stream until session.ended or turn
// count turn.completed events, in the background; done closes then.
func readSSE(t *testing.T, url string, turns int) (done chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+tokenA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done = make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if sc.Text() == "event: turn.completed" {
				if turns--; turns == 0 {
					return
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return done
}

func create(t *testing.T, base, agentName, workspace string) string {
	t.Helper()
	code, body := call(t, "POST", base+"/v1/sessions", `{"agent":"`+agentName+`","workspace_id":"`+workspace+`"}`)
	if code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("create %s: %d %s", agentName, code, body)
	}
	var info struct{ ID string }
	if err := json.Unmarshal([]byte(body), &info); err != nil || info.ID == "" {
		t.Fatalf("create: %s (%v)", body, err)
	}
	return info.ID
}

// Metrics move with real work: a mock agent's session with an approval,
// and a Claude Code CLI (the mock CLI's crash scenario) that exits with
// code 3 in its first turn.
func TestMetricsAfterActivity(t *testing.T) {
	r := serve(t, "crash", withToken(server.Config{}))
	base := "http://" + r.addr
	metricsURL := base + "/metrics"

	// Behind the hosts' tokens.
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/metrics without a token: %d", resp.StatusCode)
	}
	before := scrape(t, metricsURL)
	for _, series := range []string{
		`tether_sessions{agent="mock",state="running"}`, `tether_approvals_pending{agent="mock"}`,
	} {
		if got := sample(before, series); got != 0 {
			t.Errorf("before any work %s = %v, want 0", series, got)
		}
	}

	id := create(t, base, "mock", "w-mock")
	done := readSSE(t, base+"/v1/sessions/"+id+"/events", 1)
	if code, body := call(t, "POST", base+"/v1/sessions/"+id+"/prompt", `{"text":"please REQUEST_APPROVAL"}`); code >= 300 {
		t.Fatalf("prompt: %d %s", code, body)
	}
	waiting := eventually(t, metricsURL, `tether_approvals_pending{agent="mock"}`, 1)
	if got := sample(waiting, `tether_sessions{agent="mock",state="running"}`); got != 1 {
		t.Errorf("running mock sessions = %v while its approval waits", got)
	}
	if got := sample(waiting, `tether_approval_pending_age_seconds_count`); got != 1 {
		t.Errorf("approval age histogram count = %v", got)
	}
	if got := sample(waiting, `tether_connections{front_end="sessions_api"}`); got < 1 {
		t.Errorf("open sessions API connections = %v with an event stream open", got)
	}
	code, body := call(t, "GET", base+"/v1/approvals", "")
	var pending struct {
		Approvals []struct{ ID string } `json:"approvals"`
	}
	if err := json.Unmarshal([]byte(body), &pending); err != nil || code != 200 || len(pending.Approvals) != 1 {
		t.Fatalf("approvals: %d %s", code, body)
	}
	if code, body := call(t, "POST", base+"/v1/sessions/"+id+"/approvals/"+url.PathEscape(pending.Approvals[0].ID)+"/resolve", `{"decision":"allow"}`); code != 200 {
		t.Fatalf("resolve: %d %s", code, body)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn did not complete")
	}
	after := eventually(t, metricsURL, `tether_approvals_pending{agent="mock"}`, 0)
	for series, min := range map[string]float64{
		`tether_agent_starts_total{agent="mock",result="ok"}`:                        1,
		`tether_events_total{agent="mock",kind="turn.completed"}`:                    1,
		`tether_events_total{agent="mock",kind="approval.requested"}`:                1,
		`tether_events_total{agent="mock",kind="item.delta"}`:                        1,
		`tether_event_delivery_seconds_count{agent="mock",front_end="sessions_api"}`: 5,
		`tether_eventlog_commit_seconds_count`:                                       1,
		`tether_eventlog_committed_events_total`:                                     10,
		`tether_connections_total{front_end="sessions_api"}`:                         5,
	} {
		if got := sample(after, series); got < min {
			t.Errorf("%s = %v, want at least %v", series, got, min)
		}
	}

	// Claude Code's CLI crashes with exit code 3.
	crashed := create(t, base, "claude", "w-claude")
	if code, body := call(t, "POST", base+"/v1/sessions/"+crashed+"/prompt", `{"text":"hi"}`); code >= 300 {
		t.Fatalf("prompt: %d %s", code, body)
	}
	end := eventually(t, metricsURL, `tether_agent_crashes_total{agent="claude"}`, 1)
	if got := sample(end, `tether_agent_exits_total{agent="claude",code="3",reason="exited"}`); got != 1 {
		t.Errorf("claude exits with code 3 = %v; metrics:\n%s", got, grepTether(end))
	}
	if got := sample(end, `tether_agent_starts_total{agent="claude",result="ok"}`); got != 1 {
		t.Errorf("claude starts = %v", got)
	}
	if got := sample(end, `tether_sessions{agent="claude",state="ended"}`); got != 1 {
		t.Errorf("ended claude sessions = %v", got)
	}
	if got := sample(end, `tether_agent_crashes_total{agent="mock"}`); got > 0 {
		t.Errorf("mock crashes = %v: its session is still open", got)
	}
}

// --metrics-addr serves /metrics on a listener of its own, without a
// token; the main listener then has none.
func TestMetricsOnTheirOwnListener(t *testing.T) {
	ready := make(chan string, 1)
	r := serve(t, "text", withToken(server.Config{MetricsAddr: "127.0.0.1:0",
		MetricsReady: func(addr string) { ready <- addr }}))
	addr := <-ready
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "# TYPE tether_agent_starts_total counter") {
		t.Fatalf("metrics listener: %d\n%s", resp.StatusCode, body)
	}
	if code, _ := call(t, "GET", "http://"+r.addr+"/metrics", ""); code != http.StatusNotFound {
		t.Fatalf("main listener's /metrics with --metrics-addr: %d, want 404", code)
	}
	if err := r.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Fatal("the metrics listener outlived the runner")
	}
}

// selfSigned writes a certificate and key for 127.0.0.1.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// net/http's own complaints (here a failed TLS handshake) go through the
// runner's logger: a JSON log stays JSON lines.
func TestHTTPErrorsKeepTheLogFormat(t *testing.T) {
	cert, key := selfSigned(t)
	logs := &testenv.SyncBuffer{}
	r := serve(t, "text", withToken(server.Config{TLSCert: cert, TLSKey: key,
		Logger: slog.New(slog.NewJSONHandler(logs, nil))}))
	conn, err := net.DialTimeout("tcp", r.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
	_, _ = io.Copy(io.Discard, conn) // the server closes it
	conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "TLS handshake error") {
		if time.Now().After(deadline) {
			t.Fatalf("no handshake error logged:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for line := range strings.Lines(logs.String()) {
		if !json.Valid([]byte(line)) {
			t.Errorf("not a JSON line: %q", line)
		}
	}
}
