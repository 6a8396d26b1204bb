package web

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// The viewer shows a session's diff while its copy exists, and answers 404
// (shown as nothing) when it is gone.
func TestServerDiff(t *testing.T) {
	log := writeDemoLog(t, t.TempDir(), "audit.jsonl", nil)
	s, err := New([]string{log}, Options{Diff: func(session string, w io.Writer) error {
		if session != "live" {
			return ErrNoCopy
		}
		_, err := fmt.Fprint(w, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n")
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := get(t, s, "127.0.0.1:1", "/api/diff?session=live")
	if r.Code != 200 || !strings.Contains(r.Body.String(), "+new") || !strings.HasPrefix(r.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("%d %q %v", r.Code, r.Body, r.Header())
	}
	for _, q := range []string{"/api/diff?session=gone", "/api/diff"} {
		if r := get(t, s, "127.0.0.1:1", q); r.Code != 404 {
			t.Errorf("%s: %d, want 404", q, r.Code)
		}
	}
	// Without a Diff function there is never a diff.
	s2, _ := New([]string{log}, Options{})
	if r := get(t, s2, "127.0.0.1:1", "/api/diff?session=live"); r.Code != 404 {
		t.Errorf("no Diff: %d, want 404", r.Code)
	}
}
