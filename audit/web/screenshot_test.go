package web

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestScreenshots writes the README's screenshots of the main views when
// AGENTBOX_SCREENSHOTS names a directory. The pages are static (?live=0):
// no live connection keeps them loading.
//
//	AGENTBOX_SCREENSHOTS=$PWD/docs go test ./audit/web -run Screenshots
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("AGENTBOX_SCREENSHOTS")
	if dir == "" {
		t.Skip("set AGENTBOX_SCREENSHOTS=DIR to write the screenshots")
	}
	v := startViewer(t)
	ctx := browser(t)
	// The verdicts against a signed checkpoint: a log that extends it and
	// a tampered copy.
	checked := startDefectsViewer(t)
	shot := func(name, url, hash, ready string, n int, scroll ...string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(url+"?live=0"+hash), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
			t.Fatal(err)
		}
		count(t, ctx, ready, n)
		for _, js := range scroll {
			if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](js)); err != nil {
				t.Fatal(err)
			}
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shot("audit-sessions.png", v.url, "#/f0/", "#sessions tbody tr.row", 2)
	// The timeline from an edit to the checkpoint with a held git hook.
	shot("audit-timeline.png", v.url, "#/f0/s/"+v.aliceSession, "#timeline .ev", 19,
		`window.scrollTo(0, document.querySelector('.ev[data-line="9"]').getBoundingClientRect().top + window.scrollY - 60)`)
	shot("audit-verify.png", checked, "#/f0/verify", ".verdict-card", 2)
}
