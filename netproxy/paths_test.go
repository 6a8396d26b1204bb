package netproxy

import (
	"net/http"
	"strings"
	"testing"
)

// TestBrokerPathsAsTheUpstreamReadsThem: against an upstream that ignores
// case and merges slashes (as GitHub does for owner/repo), every variant
// of a denied path is refused before it leaves, an allowed one is sent in
// the normalised form that was matched, and an encoded slash is refused.
func TestBrokerPathsAsTheUpstreamReadsThem(t *testing.T) {
	bh := startBroker(t, "", nil)
	hdr := map[string]string{"Authorization": "Bearer " + testPlaceholder}
	for _, p := range []string{"/ADMIN/keys", "/Admin/keys", "//admin//keys", "/admin/", "/admin", "/x/../admin/keys",
		"/x/%2e%2e/admin/keys", "/%61dmin/keys", "/%41DMIN/keys", "/admin%2Fkeys", "/x%5C..%5Cadmin"} {
		for _, h := range []map[string]string{nil, hdr} {
			resp, body := bh.do(t, "GET", bh.good.URL+p, h, "")
			if resp.StatusCode != 403 || resp.Header.Get(ReasonHeader) == "" {
				t.Errorf("GET %s (placeholder %v): %d %q, want 403 with a reason", p, h != nil, resp.StatusCode, body)
			}
		}
	}
	_, paths := bh.good.seen()
	for _, p := range paths {
		if strings.Contains(strings.ToLower(p), "admin") {
			t.Errorf("the upstream received %q", p)
		}
	}
	for p, sent := range map[string]string{
		"/Repos/me/X":        "GET /Repos/me/X",
		"//repos//me/./x/":   "GET /repos/me/x/",
		"/repos/%6De/x/../y": "GET /repos/me/y",
	} {
		resp, _ := bh.do(t, "GET", bh.good.URL+p, hdr, "")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", p, resp.StatusCode)
		}
		_, paths := bh.good.seen()
		if got := paths[len(paths)-1]; got != sent {
			t.Errorf("GET %s: the upstream read %q, want %q", p, got, sent)
		}
	}
}
