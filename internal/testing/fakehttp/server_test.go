package fakehttp_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// streaming answers with a line every 10 ms until its request ends.
func streaming(w http.ResponseWriter, r *http.Request) {
	for {
		if _, err := io.WriteString(w, "tick\n"); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func start(t *testing.T, h http.HandlerFunc, opts fakehttp.Options) *fakehttp.Server {
	t.Helper()
	opts.Name = "fake"
	if opts.MaxBody == 0 {
		opts.MaxBody = 1 << 20
	}
	if opts.BodyError == nil {
		opts.BodyError = func(w http.ResponseWriter, err error) { http.Error(w, err.Error(), http.StatusRequestEntityTooLarge) }
	}
	s, err := fakehttp.Start(h, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Close ends an endless in-flight stream, waits for its handler, and
// refuses what comes after; a second Close is fine.
func TestCloseEndsInFlightStream(t *testing.T) {
	s := start(t, streaming, fakehttp.Options{})
	resp, err := http.Get(s.URL() + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "tick\n" {
		t.Fatalf("first line %q %v", line, err)
	}
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); done <- err }()
	began := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("Close took %v", took)
	}
	select {
	case <-done: // ended, cut off or closed by its handler: not endless
	case <-time.After(5 * time.Second):
		t.Fatal("client still reading after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if resp, err := http.Get(s.URL() + "/"); err == nil {
		resp.Body.Close()
		t.Error("request after Close succeeded")
	}
}

// Every request is recorded (JSON bodies kept, the chosen headers only)
// and its handler still reads the body; a body over the cap is answered
// by BodyError and recorded too.
func TestRecordsRequests(t *testing.T) {
	var seen []string
	s := start(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, string(b)+"|"+string(fakehttp.BodyOf(r)))
	}, fakehttp.Options{MaxBody: 64, Headers: []string{"X-Keep"}})
	post := func(body string) int {
		req, _ := http.NewRequest("POST", s.URL()+"/v1/x?q=1", strings.NewReader(body))
		req.Header.Set("X-Keep", "yes")
		req.Header.Set("X-Drop", "no")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(`{"a":1}`); code != 200 {
		t.Fatalf("status %d", code)
	}
	if code := post("not json"); code != 200 {
		t.Fatalf("status %d", code)
	}
	if code := post(strings.Repeat("x", 100)); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("over the cap: %d", code)
	}
	reqs := s.Requests()
	if len(reqs) != 3 || len(seen) != 2 || seen[0] != `{"a":1}|{"a":1}` {
		t.Fatalf("%d requests, handler saw %q", len(reqs), seen)
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/x" || r.Query.Get("q") != "1" || string(r.Body) != `{"a":1}` ||
		r.Header.Get("X-Keep") != "yes" || r.Header.Get("X-Drop") != "" || reqs[1].Body != nil {
		t.Fatalf("recorded %+v / %+v", r, reqs[1])
	}
	r.Header.Set("X-Keep", "changed")
	if s.Requests()[0].Header.Get("X-Keep") != "yes" {
		t.Fatal("Requests hands out the server's own record")
	}
}

// The earliest trigger wins; ERROR_ counts only with a status after it;
// the rest of the trigger's line comes with it.
func TestFirstTrigger(t *testing.T) {
	for _, c := range []struct{ text, kw, rest string }{
		{"say SLOW then SAY hi\nnext", "SLOW", " then SAY hi"},
		{"x ERROR_5 ERROR_404 SLOW", fakehttp.ErrorTrigger, "404 SLOW"},
		{"ERROR_200 only", "", ""},
	} {
		kw, rest, ok := fakehttp.FirstTrigger(c.text, "SAY ", "SLOW", fakehttp.ErrorTrigger)
		if kw != c.kw || rest != c.rest || ok != (c.kw != "") {
			t.Errorf("%q: %q %q %v", c.text, kw, rest, ok)
		}
	}
}

// Split never cuts a rune and always gives at least one piece.
func TestSplit(t *testing.T) {
	got := fakehttp.Split("héllo wörld", 3)
	if strings.Join(got, "") != "héllo wörld" || len(got) != 4 || got[0] != "hél" {
		t.Fatalf("%q", got)
	}
	if got := fakehttp.Split("", 3); len(got) != 1 || got[0] != "" {
		t.Fatalf("empty: %q", got)
	}
}
