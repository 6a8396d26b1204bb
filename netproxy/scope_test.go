package netproxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestBrokerSubstitutesOnlyIntoNamedHeaders: the placeholder is put only
// into the headers the secret names (Authorization by default); anywhere
// else in the head it is refused, never substituted.
func TestBrokerSubstitutesOnlyIntoNamedHeaders(t *testing.T) {
	bh := startBroker(t, "", nil)
	for _, c := range []struct {
		name string
		hdr  map[string]string
		path string
	}{
		{"other header", map[string]string{"X-Token": testPlaceholder}, "/x"},
		{"both", map[string]string{"Authorization": "Bearer " + testPlaceholder, "X-Echo-Me": testPlaceholder}, "/y"},
		{"cookie", map[string]string{"Cookie": "t=" + testPlaceholder}, "/z"},
		{"path", nil, "/p/" + testPlaceholder},
		{"query", nil, "/q?t=" + testPlaceholder},
	} {
		resp, body := bh.do(t, "GET", bh.good.URL+c.path, c.hdr, "")
		if resp.StatusCode != 403 || !strings.Contains(resp.Header.Get(ReasonHeader), "secrets.TOKEN.headers (Authorization)") {
			t.Errorf("%s: %d %q %q, want 403 naming the headers", c.name, resp.StatusCode, resp.Header.Get(ReasonHeader), body)
		}
	}
	if auths, paths := bh.good.seen(); len(paths) != 0 {
		t.Errorf("refused requests reached the upstream: %q %q", paths, auths)
	}
	// The named header, plain and as Basic credentials: substituted.
	resp, _ := bh.do(t, "GET", bh.good.URL+"/ok", map[string]string{"Authorization": "Bearer " + testPlaceholder}, "")
	u, _ := url.Parse(bh.good.URL + "/basic")
	u.User = url.UserPassword("x", testPlaceholder)
	resp2, _ := bh.do(t, "GET", u.String(), nil, "")
	auths, _ := bh.good.seen()
	if resp.StatusCode != 200 || resp2.StatusCode != 200 || fmt.Sprint(auths) != fmt.Sprint([]string{"Bearer " + testValue + " ", "basic x:" + testValue + " "}) {
		t.Errorf("named header: %d %d, upstream got %q", resp.StatusCode, resp2.StatusCode, auths)
	}
}

// TestBrokerTLSOnly: over plain HTTP the placeholder is refused unless
// the secret says allow_plaintext; a portless hosts entry means 443 only.
func TestBrokerTLSOnly(t *testing.T) {
	t.Setenv("BROKER_TEST_TOKEN", testValue)
	var got []string
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
	}))
	t.Cleanup(plain.Close)
	pport := strings.TrimPrefix(plain.URL, "http://127.0.0.1:")
	for _, c := range []struct {
		hosts, extra string
		want         int
	}{
		{`["127.0.0.1:` + pport + `"]`, "", 403},
		{`["127.0.0.1"]`, "", 403},                        // portless: 443, not this port
		{`["127.0.0.1"]`, ", allow_plaintext: true", 403}, // still 443 only
		{`["127.0.0.1:` + pport + `"]`, ", allow_plaintext: true", 200},
	} {
		yaml := fmt.Sprintf("network:\n  allow: [\"127.0.0.1\"]\nsecrets:\n  TOKEN: {from: \"env:BROKER_TEST_TOKEN\", hosts: %s%s}\n", c.hosts, c.extra)
		pol := mustPolicy(t, yaml)
		ca, _ := NewCA("t")
		b := &Broker{CA: ca, Rules: pol, Secrets: []Secret{{Spec: pol.Secrets()[0], Placeholder: testPlaceholder, Value: testValue}}}
		h := startProxy(t, yaml, nil, func(c *Config) { c.Broker = b })
		pu, _ := url.Parse("http://" + h.addr)
		pc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
		req, _ := http.NewRequest("GET", plain.URL+"/p", nil)
		req.Header.Set("Authorization", "Bearer "+testPlaceholder)
		resp, err := pc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want || (c.want == 403 && resp.Header.Get(ReasonHeader) == "") {
			t.Errorf("hosts %s%s: %d, want %d (%q)", c.hosts, c.extra, resp.StatusCode, c.want, resp.Header.Get(ReasonHeader))
		}
	}
	if len(got) != 1 || got[0] != "Bearer "+testValue {
		t.Errorf("the plain upstream got %q, want the value once (allow_plaintext)", got)
	}
}
