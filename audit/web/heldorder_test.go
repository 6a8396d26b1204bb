package web

import (
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
)

// A held change recorded before its call's changes record (a bulk call:
// the decisions' holds go with the result, the changes record when the
// copies finish) folds into that row as one recorded after it does.
func TestBrowserHeldBeforeItsChanges(t *testing.T) {
	recs := demoSession(aliceSession, "alice", 0, true)
	ci, ai := -1, -1
	for i, r := range recs {
		if r.CallID == "call_5" && r.Event == audit.EventChanges {
			ci = i
		}
		if r.CallID == "call_5" && r.Event == audit.EventAlarm {
			ai = i
		}
	}
	if ci < 0 || ai != ci+1 {
		t.Fatalf("the demo session changed: changes at %d, its held alarm at %d", ci, ai)
	}
	recs[ci], recs[ai] = recs[ai], recs[ci]
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := New([]string{path}, Options{Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	ctx := browser(t)
	navigate(t, ctx, ts.URL+"/?live=0#/f0/s/"+aliceSession)
	held := `#timeline .ev[data-event="changes"] tr.held td:nth-child(2)`
	count(t, ctx, held+" > div", 2)
	if p := text(t, ctx, held+" > div:first-child"); p != ".git/hooks/pre-commit" {
		t.Errorf("held path in call_5's changes row: %q", p)
	}
	// The timeline's one alarm row left is the hard link's (no call).
	count(t, ctx, `#timeline .ev[data-event="alarm"]`, 1)
}
