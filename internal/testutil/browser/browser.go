// Package browser starts headless Chromium for tests that check pages as a
// user sees them (the audit viewer). It is its own package so that only those
// tests link chromedp: the rest of the unit tier compiles without it.
package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Start starts a headless Chromium for the life of the test and returns
// a context of it with a deadline of a few minutes. Without chromium in
// PATH the test is skipped (on CI, where .ci/run installs Debian's, it
// fails).
func Start(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no chromium in PATH (CI installs Debian's chromium: .ci/run)")
		}
		t.Skip("no chromium in PATH; install it: apt-get install chromium")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1360, 900), chromedp.Flag("force-device-scale-factor", "1"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelC := chromedp.NewContext(actx)
	// The first Run starts the browser for the life of bctx; the test's
	// deadline goes on a context derived after that.
	if err := chromedp.Do(bctx); err != nil {
		cancelC()
		cancelA()
		t.Fatalf("starting chromium: %v", err)
	}
	ctx, cancelT := context.WithTimeout(bctx, 3*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	return ctx
}

// Navigate loads url and waits until the viewer says it is ready
// (body[data-ready="1"]).
func Navigate(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
}

// Count polls until selector matches want elements (deadline: ctx).
func Count(t *testing.T, ctx context.Context, selector string, want int) {
	t.Helper()
	for {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, selector)))
		if err != nil {
			t.Fatalf("counting %s: %v", selector, err)
		}
		if n == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %d elements, want %d", selector, n, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Text is the text of the first element selector matches.
func Text(t *testing.T, ctx context.Context, selector string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(selector)))
	if err != nil {
		t.Fatalf("text of %s: %v", selector, err)
	}
	return s
}

// SetFilter sets a filter control the way a user does (value, then the
// event the page listens to).
func SetFilter(t *testing.T, ctx context.Context, id, value, event string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.value = %q; e.dispatchEvent(new Event(%q)); })()`, id, value, event)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](js)); err != nil {
		t.Fatalf("setting %s to %q: %v", id, value, err)
	}
}
