package mast

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct {
		in        string
		typ, req  string
		wantError bool
	}{
		{`{"type":"send_prompt","requestId":"r1","sessionId":"s","text":"hi"}`, "send_prompt", "r1", false},
		{`{"type":"sync_request","cachedSessionIds":["a"],"lastEventTimestamp":"1970-01-01T00:00:00.000Z"}`, "sync_request", "", false},
		{`{"requestId":"r2"}`, "", "r2", true},
		{`{"requestId":"r3","type":"get_diff","sessionId":{}}`, "get_diff", "r3", true},
		{`{"requestId":4,"type":"x"}`, "x", "", true},
		{`[]`, "", "", true},
		{`nope`, "", "", true},
		{``, "", "", true},
	} {
		c, err := ParseCommand([]byte(tc.in))
		if (err != nil) != tc.wantError || c.Type != tc.typ || c.RequestID != tc.req {
			t.Errorf("ParseCommand(%s) = %+v, %v", tc.in, c, err)
		}
		if err != nil && !errors.Is(err, ErrBadFrame) {
			t.Errorf("ParseCommand(%s): %v does not match ErrBadFrame", tc.in, err)
		}
	}
}

// Whatever comes over the wire, ParseCommand returns (no panic), and a
// frame it accepts has a type.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{`{"type":"list_sessions","requestId":"r"}`, `{"requestId":"r","type":5}`, `{"type":"sync_request","cachedSessionIds":[1]}`, `null`, `"x"`, `{"type":""}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCommand(data)
		if err == nil && c.Type == "" {
			t.Fatalf("accepted %q without a type", data)
		}
		if err != nil && !errors.Is(err, ErrBadFrame) {
			t.Fatalf("%q: error %v is not ErrBadFrame", data, err)
		}
	})
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "device-key.json")
	if k, err := LoadKey(path); k != "" || err != nil {
		t.Fatalf("missing file: %q, %v", k, err)
	}
	if err := SaveKey(path, "dk_1", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if k, err := LoadKey(path); k != "dk_1" || err != nil {
		t.Fatalf("saved: %q, %v", k, err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != `{"deviceKey":"dk_1","pairedAt":"2026-01-02T03:04:05.000000Z"}` {
		t.Fatalf("file %s", data)
	}
	if err := os.WriteFile(path, []byte(`{"key":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(path); err == nil {
		t.Fatal("a file without a deviceKey was read")
	}
}

func TestTimestamps(t *testing.T) {
	ts := Timestamp(time.Date(2026, 11, 25, 12, 0, 0, 123456789, time.FixedZone("x", 3600)))
	if ts != "2026-11-25T11:00:00.123456Z" {
		t.Fatalf("Timestamp = %s", ts)
	}
	for _, s := range []string{ts, "1970-01-01T00:00:00.000Z", "2026-11-25T11:00:00Z"} {
		if _, err := ParseTimestamp(s); err != nil {
			t.Errorf("ParseTimestamp(%s): %v", s, err)
		}
	}
	if _, err := ParseTimestamp("yesterday"); !errors.Is(err, ErrBadFrame) {
		t.Errorf("ParseTimestamp(yesterday): %v", err)
	}
}
