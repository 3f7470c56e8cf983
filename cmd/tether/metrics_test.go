package main

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"
)

// --metrics-addr on loopback answers only loopback Host names, as the
// main listener does: a page on a name rebound to 127.0.0.1 cannot read
// the metrics.
func TestServeMetricsAddrChecksHost(t *testing.T) {
	p := startServe(t, cleanEnv(), "--cli", mockCLI(t, "text", 0), "--metrics-addr", "127.0.0.1:0")
	var addr string
	for deadline := time.Now().Add(waitLimit); addr == ""; time.Sleep(10 * time.Millisecond) {
		for _, line := range p.lines() {
			if _, rest, ok := strings.Cut(line, `msg="metrics listening" addr=`); ok {
				addr, _, _ = strings.Cut(rest, " ")
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics listener in the log:\n%s", p.log())
		}
	}
	for host, want := range map[string]int{"evil.example": http.StatusForbidden, "evil.example:" + strings.Split(addr, ":")[1]: http.StatusForbidden,
		addr: http.StatusOK, "localhost": http.StatusOK} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&body)
		resp.Body.Close()
		if resp.StatusCode != want || want == http.StatusOK && !strings.Contains(body.String(), "# TYPE tether_") ||
			want != http.StatusOK && strings.Contains(body.String(), "tether_") {
			t.Errorf("Host %s: %d, want %d\n%.300s", host, resp.StatusCode, want, body.String())
		}
	}
}
