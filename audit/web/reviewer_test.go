package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/chromedp/chromedp"
)

const aliceSession = "7f3c9a1e-0b4d-4e21-9a55-2c8e1f0d3b71"

// startStaticViewer serves the demo log and counts the live connections
// opened (GET /api/events).
func startStaticViewer(t *testing.T) (string, *atomic.Int32) {
	s, err := New([]string{writeDemoLog(t, t.TempDir(), "audit.jsonl", nil)}, Options{Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var live atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/events" {
			live.Add(1)
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/", &live
}

func evaluate[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// Issue 40: ?live=0 is a static page: it finishes loading and opens no
// live connection (a headless browser can take its screenshot); without
// it the page follows the log.
func TestBrowserStaticPage(t *testing.T) {
	url, live := startStaticViewer(t)
	ctx := browser(t)
	navigate(t, ctx, url+"?live=0#/f0/s/"+aliceSession)
	count(t, ctx, "#timeline .ev", 19)
	if !evaluate[bool](t, ctx, `document.readyState === "complete" && !document.getElementById("live").checked`) {
		t.Fatal("?live=0: the page is still loading or the live box is checked")
	}
	navigate(t, ctx, url+"?live=0#/f0/")
	count(t, ctx, "#sessions tbody tr.row", 2)
	if n := live.Load(); n != 0 {
		t.Fatalf("?live=0 opened %d live connections", n)
	}
	navigate(t, ctx, url+"#/f0/")
	testutil.Eventually(t, 30*time.Second, "the live connection of a page without ?live=0", func() bool { return live.Load() > 0 })
}

// Issue 40: a changes row lists its files (kind, path, size, sha256) and
// the held ones with their hazard; held changes are a filter kind.
func TestBrowserChangesRow(t *testing.T) {
	url, _ := startStaticViewer(t)
	ctx := browser(t)
	navigate(t, ctx, url+"?live=0#/f0/s/"+aliceSession)
	count(t, ctx, `#timeline .ev[data-event="changes"]`, 2)
	edit := text(t, ctx, `#timeline .ev[data-line="11"]`)
	for _, s := range []string{"write_file", "checkpoint 1 · 1 file", "modified", "parser/quote.go", "2210", "9e9e9e9e", "was 5a5a5a5a"} {
		if !strings.Contains(edit, s) {
			t.Errorf("changes row of the edit lacks %q: %q", s, edit)
		}
	}
	hook := text(t, ctx, `#timeline .ev[data-line="14"]`)
	for _, s := range []string{"checkpoint 2 · 1 file · 1 held", "added", "parser/quote_test.go", "930", "41414141", "held", "not promoted"} {
		if !strings.Contains(hook, s) {
			t.Errorf("changes row with a held hook lacks %q: %q", s, hook)
		}
	}
	// The held change: its path, hazard and why each on their own.
	held := `#timeline .ev[data-event="changes"] tr.held td:nth-child(2)`
	count(t, ctx, held+" > div", 2)
	if p := text(t, ctx, held+" > div:first-child"); p != ".git/hooks/pre-commit" {
		t.Errorf("held path: %q", p)
	}
	if h := text(t, ctx, held+" > div:last-child"); !strings.HasPrefix(h, "hazard:git-config") || !strings.HasSuffix(h, " .git/hooks is configuration git reads or runs") {
		t.Errorf("held hazard and why: %q", h)
	}
	// The held filter.
	if err := chromedp.Do(ctx, setFilter("f-kind", "held", "change")); err != nil {
		t.Fatal(err)
	}
	count(t, ctx, "#timeline .ev", 1)
	if got := text(t, ctx, "#timeline .ev"); !strings.Contains(got, ".git/hooks/pre-commit") {
		t.Errorf("held filter shows %q", got)
	}
	if err := chromedp.Do(ctx, setFilter("f-kind", "changes", "change")); err != nil {
		t.Fatal(err)
	}
	count(t, ctx, "#timeline .ev", 2)

	// In the denials view, a held change is a kind, laid out in columns.
	navigate(t, ctx, url+"?live=0#/f0/denials")
	count(t, ctx, "#d-kind", 1) // the hash changed: the page is not reloaded
	if err := chromedp.Do(ctx, setFilter("d-kind", "held", "change")); err != nil {
		t.Fatal(err)
	}
	count(t, ctx, "#denials tr.denial-row", 2)
	cols := evaluate[[]string](t, ctx, `[...document.querySelectorAll("#denials tr.denial-row")[0].cells].map(c => c.textContent)`)
	if len(cols) != 7 || cols[2] != "held" || cols[3] != "held added .git/hooks/pre-commit" || cols[4] != "hazard:git-config" || cols[5] != ".git/hooks is configuration git reads or runs" {
		t.Errorf("held row: %q", cols)
	}
}

// Issue 40: a call refused for want of a terminal is one row (the call,
// the approval's answer folded in), on the timeline and with the denials.
func TestBrowserRefusedCallOneRow(t *testing.T) {
	url, _ := startStaticViewer(t)
	ctx := browser(t)
	navigate(t, ctx, url+"?live=0#/f0/s/"+aliceSession)
	count(t, ctx, "#timeline .ev", 19)
	count(t, ctx, `#timeline .ev[data-event="approval"]`, 0)
	if err := chromedp.Do(ctx, setFilter("f-text", "git push", "input")); err != nil {
		t.Fatal(err)
	}
	count(t, ctx, "#timeline .ev", 1)
	row := text(t, ctx, "#timeline .ev")
	for _, s := range []string{"git push origin main", "DENY", "commands.ask[1]", "asked:", "approver deny-all (no-terminal)", "no one could be asked (no terminal)"} {
		if !strings.Contains(row, s) {
			t.Errorf("refused call lacks %q: %q", s, row)
		}
	}
	// The kind filter still finds the call by its approval.
	if err := chromedp.Do(ctx, setFilter("f-text", "", "input"), setFilter("f-kind", "approval", "change")); err != nil {
		t.Fatal(err)
	}
	count(t, ctx, "#timeline .ev", 2) // git commit (allowed) and git push (refused)

	navigate(t, ctx, url+"?live=0#/f0/denials")
	count(t, ctx, "#d-kind", 1) // the hash changed: the page is not reloaded
	if err := chromedp.Do(ctx, setFilter("d-text", "git push", "input")); err != nil {
		t.Fatal(err)
	}
	count(t, ctx, "#denials tr.denial-row", 2) // one per session
	cols := evaluate[[]string](t, ctx, `[...document.querySelectorAll("#denials tr.denial-row")[0].cells].map(c => c.textContent)`)
	if len(cols) != 7 || cols[2] != "call" || !strings.Contains(cols[5], "asked: deny by deny-all (no-terminal) — the policy requires approval") {
		t.Errorf("refused call row: %q", cols)
	}
	if err := chromedp.Do(ctx, setFilter("d-text", "", "input"), setFilter("d-kind", "approval", "change")); err != nil {
		t.Fatal(err)
	}
	count(t, ctx, "#denials tr.denial-row", 0)
}

// Issue 40: without a checkpoint, the verification page says what the
// hash chain proved and what it cannot.
func TestBrowserVerificationStatement(t *testing.T) {
	url, _ := startStaticViewer(t)
	ctx := browser(t)
	navigate(t, ctx, url+"?live=0#/f0/verify")
	count(t, ctx, ".verdict-card .statement", 1)
	got := text(t, ctx, ".verdict-card .statement")
	if !strings.Contains(got, "verified") || !strings.Contains(got, "the hash chain of all 43 records is intact") ||
		!strings.Contains(got, "not verified") || !strings.Contains(got, "without a key the hash chain cannot show a complete rewrite") {
		t.Errorf("statement: %q", got)
	}
	count(t, ctx, ".verdict-card .checkpoint", 0)
}
