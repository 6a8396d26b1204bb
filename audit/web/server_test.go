package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, host, url string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", url, nil)
	req.Host = host
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestServerAPI(t *testing.T) {
	dir := t.TempDir()
	log := writeDemoLog(t, dir, "audit.jsonl", nil)
	s, err := New([]string{log}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var sessions []Session
	r := get(t, s, "127.0.0.1:8080", "/api/sessions?file=0")
	if r.Code != 200 || json.Unmarshal(r.Body.Bytes(), &sessions) != nil || len(sessions) != 2 {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	a := sessions[1]
	if a.User != "alice" || a.Host != "build-07" || a.Calls != 6 || a.Denials != 3 || a.Alarms != 2 || a.Status != "ok" || a.PolicySHA256 == "" {
		t.Fatalf("%+v", a)
	}
	var lines []Line
	r = get(t, s, "localhost:1", "/api/records?file=0&session="+a.ID)
	if json.Unmarshal(r.Body.Bytes(), &lines) != nil || len(lines) != 22 || lines[0].Line != 1 || lines[0].Rec.Task == "" {
		t.Fatalf("%s", r.Body)
	}
	var files []FileVerdict
	r = get(t, s, "[::1]:1", "/api/files")
	if json.Unmarshal(r.Body.Bytes(), &files) != nil || len(files) != 1 || !files[0].Intact || files[0].Keyed {
		t.Fatalf("%s", r.Body)
	}
	r = get(t, s, "127.0.0.1:1", "/")
	if r.Code != 200 || !strings.Contains(r.Body.String(), "static/app.js") || !strings.Contains(r.Header().Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("%d %s", r.Code, r.Header())
	}
	if r := get(t, s, "127.0.0.1:1", "/static/app.js"); r.Code != 200 || !strings.Contains(r.Body.String(), "textContent") {
		t.Fatalf("app.js: %d", r.Code)
	}
	if r := get(t, s, "127.0.0.1:1", "/api/sessions?file=1"); r.Code != 400 {
		t.Fatalf("out-of-range file: %d", r.Code)
	}
	// Damage shows in the verdict.
	b, _ := os.ReadFile(log)
	os.WriteFile(log, []byte(strings.Replace(string(b), "go test ./parser/...", "curl x | sh; true", 1)), 0o600)
	r = get(t, s, "127.0.0.1:1", "/api/files")
	json.Unmarshal(r.Body.Bytes(), &files)
	if files[0].Intact || len(files[0].Damage) != 1 || files[0].Damage[0].Line != 4 {
		t.Fatalf("%s", r.Body)
	}
}

// The viewer is read-only; a foreign Host (DNS rebinding) is refused
// without a token; with a token, every request needs it.
func TestServerAccess(t *testing.T) {
	log := writeDemoLog(t, t.TempDir(), "a.jsonl", nil)
	s, _ := New([]string{log}, Options{})
	if r := get(t, s, "attacker.example:80", "/api/files"); r.Code != 403 {
		t.Fatalf("foreign host: %d", r.Code)
	}
	req := httptest.NewRequest("POST", "/api/files", nil)
	req.Host = "127.0.0.1"
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 405 {
		t.Fatalf("POST: %d", rec.Code)
	}
	tok, _ := NewToken()
	st, _ := New([]string{log}, Options{Token: tok})
	for _, u := range []string{"/", "/api/files", "/api/files?token=wrong", "/static/app.js"} {
		if r := get(t, st, "10.0.0.5:8080", u); r.Code != 401 {
			t.Errorf("%s without the token: %d", u, r.Code)
		}
	}
	if r := get(t, st, "10.0.0.5:8080", "/api/files?token="+tok); r.Code != 200 {
		t.Fatalf("with the token: %d", r.Code)
	}
	for addr, want := range map[string]bool{"127.0.0.1:0": true, "localhost:80": true, "[::1]:9": true, "0.0.0.0:80": false, ":8080": false, "192.168.1.4:80": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) != %v", addr, want)
		}
	}
}
