package netproxy

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

const (
	testValue       = "real-secret-value-0123456789"
	testPlaceholder = "agentbox-placeholder-TOKEN-5f2a9c1e"
)

// upstream is an httptest TLS server that records every credential it
// receives and echoes the Authorization header in its answer (as a
// careless API might).
type upstream struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
	paths []string
}

func (u *upstream) seen() (auths, paths []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.auths...), append([]string(nil), u.paths...)
}

func (u *upstream) all() []string {
	_, paths := u.seen()
	return paths
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		auth := r.Header.Get("Authorization")
		if user, pw, ok := r.BasicAuth(); ok {
			auth = "basic " + user + ":" + pw
		}
		u.mu.Lock()
		u.auths = append(u.auths, auth+" "+r.Header.Get("X-Token"))
		u.paths = append(u.paths, r.Method+" "+r.URL.Path)
		u.mu.Unlock()
		w.Header().Set("X-Echo", auth)
		if r.URL.Path == "/gzip" {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			fmt.Fprintf(zw, "echo %s", auth)
			zw.Close()
			return
		}
		fmt.Fprintf(w, "echo %s body=%d", auth, len(body))
	}))
	t.Cleanup(u.Close)
	return u
}

func upstreamPort(u *upstream) string { return strings.TrimPrefix(u.URL, "https://127.0.0.1:") }

// brokerHarness is a proxy with a broker in front of two upstreams: the
// secret may go to good only.
type brokerHarness struct {
	*harness
	good, other *upstream
	client      *http.Client
	call        Call
}

func startBroker(t *testing.T, extra string, roots func(good, other *upstream) *x509.CertPool) *brokerHarness {
	t.Setenv("BROKER_TEST_TOKEN", testValue)
	good, other := newUpstream(t), newUpstream(t)
	yaml := fmt.Sprintf(`network:
  allow: ["127.0.0.1"]
  rules:
    - {host: "127.0.0.1:%[1]s", paths: ["/admin/**"], action: deny}
    - {host: "127.0.0.1:%[1]s", methods: [DELETE], action: deny}
secrets:
  TOKEN: {from: "env:BROKER_TEST_TOKEN", hosts: ["127.0.0.1:%[1]s"]%[2]s}
`, upstreamPort(good), extra)
	pol := mustPolicy(t, yaml)
	ca, err := NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(good.Certificate())
	pool.AddCert(other.Certificate())
	if roots != nil {
		pool = roots(good, other)
	}
	bh := &brokerHarness{good: good, other: other}
	b := &Broker{CA: ca, Rules: pol, Roots: pool, Call: func() Call { return bh.call },
		Secrets: []Secret{{Spec: pol.Secrets()[0], Placeholder: testPlaceholder, Value: testValue}}}
	bh.harness = startProxy(t, yaml, nil, func(c *Config) { c.Broker = b })
	trust := x509.NewCertPool()
	trust.AddCert(ca.Cert())
	pu, _ := url.Parse("http://" + bh.addr)
	bh.client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: trust}, DisableKeepAlives: false}}
	t.Cleanup(bh.client.CloseIdleConnections)
	return bh
}

// waitFor waits for the first event that ok accepts.
func (bh *brokerHarness) waitFor(t *testing.T, ok func(Event) bool) Event {
	t.Helper()
	for n := 1; ; n++ {
		for _, e := range bh.waitEvents(t, n) {
			if ok(e) {
				return e
			}
		}
	}
}

func (bh *brokerHarness) do(t *testing.T, method, rawURL string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := bh.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestBrokerSubstitutesOnlyForItsHostsAndScrubs(t *testing.T) {
	bh := startBroker(t, ", headers: [Authorization, x-token]", nil)
	bh.call = Call{ID: "call_7", Command: "curl ..."}
	body := "payload for the receipt"
	for _, hdr := range []map[string]string{
		{"Authorization": "Bearer " + testPlaceholder},
		{"X-Token": testPlaceholder},
	} {
		resp, got := bh.do(t, "POST", bh.good.URL+"/repos/x", hdr, body)
		if resp.StatusCode != 200 {
			t.Fatalf("allowed request: %d %s", resp.StatusCode, got)
		}
		if strings.Contains(got, testValue) || strings.Contains(resp.Header.Get("X-Echo"), testValue) {
			t.Errorf("the response handed to the sandbox carries the value: %q %q", got, resp.Header.Get("X-Echo"))
		}
	}
	// Basic auth, as git sends https://x:TOKEN@host/ credentials.
	u, _ := url.Parse(bh.good.URL + "/repo.git/info/refs")
	u.User = url.UserPassword("x", testPlaceholder)
	resp, got := bh.do(t, "GET", u.String(), nil, "")
	if resp.StatusCode != 200 || strings.Contains(got, testValue) {
		t.Fatalf("basic auth: %d %q", resp.StatusCode, got)
	}
	// gzip is decoded so that it can be scrubbed.
	resp, got = bh.do(t, "GET", bh.good.URL+"/gzip", map[string]string{"Authorization": "Bearer " + testPlaceholder}, "")
	if resp.StatusCode != 200 || strings.Contains(got, testValue) || !strings.Contains(got, "echo Bearer ****") {
		t.Fatalf("gzip: %d %q", resp.StatusCode, got)
	}
	auths, _ := bh.good.seen()
	want := []string{"Bearer " + testValue + " ", " " + testValue, "basic x:" + testValue + " ", "Bearer " + testValue + " "}
	if fmt.Sprint(auths) != fmt.Sprint(want) {
		t.Errorf("upstream received %q, want %q", auths, want)
	}
	evs := bh.waitEvents(t, 4)
	var receipts []Event
	for _, e := range evs {
		if e.Secret != "" {
			receipts = append(receipts, e)
		}
	}
	if len(receipts) != 4 {
		t.Fatalf("receipts: %+v", evs)
	}
	sum := sha256.Sum256([]byte(body))
	r := receipts[0]
	if r.Secret != "TOKEN" || r.CallID != "call_7" || r.BodySHA256 != hex.EncodeToString(sum[:]) || r.Status != 200 || r.Method != "POST" || r.Path != "/repos/x" || r.Decision != Allow {
		t.Errorf("receipt = %+v", r)
	}
}

func TestBrokerRefusesMisuseAndDeniedRequests(t *testing.T) {
	bh := startBroker(t, "", nil)
	bh.call = Call{ID: "call_9"}
	hdr := map[string]string{"Authorization": "Bearer " + testPlaceholder}
	cases := []struct {
		method, url, rule string
		alarm             bool
	}{
		{"GET", bh.other.URL + "/steal", "network.allow[0]", true}, // another destination
		{"GET", bh.good.URL + "/admin/keys", "network.rules[0]", true},
		{"DELETE", bh.good.URL + "/repo", "network.rules[1]", true},
		{"GET", bh.other.URL + "/x?t=" + testPlaceholder, "network.allow[0]", true}, // in the query
	}
	for _, c := range cases {
		h := hdr
		if strings.Contains(c.url, "?t=") {
			h = nil
		}
		resp, got := bh.do(t, c.method, c.url, h, "")
		if resp.StatusCode != 403 || resp.Header.Get(ReasonHeader) == "" {
			t.Errorf("%s %s: %d %q, want 403 with a reason", c.method, c.url, resp.StatusCode, got)
		}
		path := "/" + strings.SplitN(strings.SplitN(c.url, "://", 2)[1], "/", 2)[1]
		ev := bh.waitFor(t, func(e Event) bool { return e.Method == c.method && e.Path == path })
		if ev.Decision != Deny || ev.Rule != c.rule || (ev.Alarm == KindSecretMisuse) != c.alarm || ev.CallID != "call_9" {
			t.Errorf("%s %s: event %+v", c.method, c.url, ev)
		}
		if strings.HasPrefix(c.rule, "network.rules") && !strings.Contains(ev.RuleText, "action: deny") {
			t.Errorf("rule text missing: %+v", ev)
		}
	}
	// A denied request without a placeholder is a deny, not an alarm.
	resp, _ := bh.do(t, "GET", bh.good.URL+"/admin/x", nil, "")
	if resp.StatusCode != 403 {
		t.Errorf("denied path: %d", resp.StatusCode)
	}
	gotAuths, gotPaths := bh.good.seen()
	otherAuths, _ := bh.other.seen()
	if len(gotPaths) != 0 || len(otherAuths) != 0 {
		t.Errorf("refused requests reached an upstream: good %q %q, other %q", gotPaths, gotAuths, otherAuths)
	}
}

func TestBrokerAlteredPlaceholderNotSubstituted(t *testing.T) {
	bh := startBroker(t, ", headers: [X-Token]", nil)
	for _, alt := range []string{
		strings.ToUpper(testPlaceholder),
		url.QueryEscape(testPlaceholder[:10]) + "%2D" + testPlaceholder[11:],
		testPlaceholder[:12] + " " + testPlaceholder[12:],
	} {
		resp, _ := bh.do(t, "GET", bh.good.URL+"/x", map[string]string{"X-Token": alt}, "")
		if resp.StatusCode != 200 {
			t.Errorf("altered %q: %d", alt, resp.StatusCode)
		}
	}
	auths, _ := bh.good.seen()
	for _, a := range auths {
		if strings.Contains(a, testValue) {
			t.Errorf("an altered placeholder was substituted: %q", a)
		}
	}
}

// TestBrokerDuring: a secret bound to programs goes only into
// connections every holder of which is in the process tree of a program
// during names; another program of the same call, an unknown origin, or a
// connection shared with another program get none (403 and an alarm), and
// the receipt names the program.
func TestBrokerDuring(t *testing.T) {
	bh := startBroker(t, `, during: ["git push"]`, nil)
	hdr := map[string]string{"Authorization": "Bearer " + testPlaceholder}
	script := []string{"bash", "--noprofile", "--norc", "-c", "git push --help >/dev/null; python3 use.py"}
	gitPush := sandbox.OriginProcess{PID: 12, Chain: [][]string{{"/usr/lib/git-core/git-remote-https", "origin", "https://x"}, {"git", "push", "origin", "main"}, script}}
	python := sandbox.OriginProcess{PID: 13, Chain: [][]string{{"/usr/bin/python3.11", "use.py"}, script}}
	pushLike := sandbox.OriginProcess{PID: 14, Chain: [][]string{{"/usr/bin/python3.11", "push"}, script}} // exec -a git python3 push
	for _, c := range []struct {
		name   string
		origin *sandbox.Origin
		want   int
	}{
		{"unknown origin", nil, 403},
		{"unattributed", &sandbox.Origin{Error: "no process holds the connection's socket"}, 403},
		{"python in the same call", &sandbox.Origin{Holders: []sandbox.OriginProcess{python}}, 403},
		{"argv0 chosen to look like git", &sandbox.Origin{Holders: []sandbox.OriginProcess{pushLike}}, 403},
		{"shared with python", &sandbox.Origin{Holders: []sandbox.OriginProcess{gitPush, python}}, 403},
		{"git push's tree", &sandbox.Origin{Holders: []sandbox.OriginProcess{gitPush}}, 200},
	} {
		bh.origin.Store(c.origin)
		bh.client.CloseIdleConnections() // the origin is the connection's
		resp, body := bh.do(t, "GET", bh.good.URL+"/x", hdr, "")
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d %q, want %d", c.name, resp.StatusCode, body, c.want)
		}
	}
	auths, _ := bh.good.seen()
	if len(auths) != 1 {
		t.Errorf("upstream got %q, want one credentialed request", auths)
	}
	var alarms int
	for _, e := range bh.waitEvents(t, 11) { // six requests, five connections closed
		if e.Alarm == KindSecretMisuse {
			alarms++
		}
		if e.Secret == "TOKEN" && e.Decision == Allow && (e.PID != 12 || fmt.Sprint(e.Argv) != "[git push origin main]") {
			t.Errorf("the receipt does not name the program: %+v", e)
		}
	}
	if alarms < 5 {
		t.Errorf("%d secret_misuse alarms, want 5", alarms)
	}
}

func TestBrokerUpstreamCertMustVerify(t *testing.T) {
	bh := startBroker(t, "", func(good, other *upstream) *x509.CertPool { return x509.NewCertPool() })
	resp, got := bh.do(t, "GET", bh.good.URL+"/x", map[string]string{"Authorization": "Bearer " + testPlaceholder}, "")
	if resp.StatusCode != 502 || !strings.Contains(resp.Header.Get(ReasonHeader), "did not verify") {
		t.Errorf("unverified upstream: %d %q %q", resp.StatusCode, resp.Header.Get(ReasonHeader), got)
	}
	if auths, _ := bh.good.seen(); len(auths) != 0 {
		t.Errorf("the unverified upstream received %q", auths)
	}
}

func TestScrubReaderSplits(t *testing.T) {
	vals := newScrubber([]string{testValue, "short-secret"})
	src := strings.Repeat("x", 70000) + testValue + "yy" + testValue[:5] + "short-secret" + testValue
	want := strings.Repeat("x", 70000) + strings.Repeat("*", len(testValue)) + "yy" + testValue[:5] + "************" + strings.Repeat("*", len(testValue))
	for _, chunk := range []int{1, 3, 7, 100, 4096, 1 << 20} {
		got, err := io.ReadAll(newScrubReader(&chunked{s: src, n: chunk}, vals))
		if err != nil || string(got) != want {
			t.Errorf("chunk %d: mismatch (len %d vs %d), err %v", chunk, len(got), len(want), err)
		}
	}
}

type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[n:]
	return n, nil
}

func FuzzScrubReader(f *testing.F) {
	f.Add([]byte("abc"+testValue+"def"), 3)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		if n <= 0 || n > 1<<16 {
			n = 1
		}
		got, err := io.ReadAll(newScrubReader(&chunked{s: string(data), n: n}, newScrubber([]string{testValue})))
		if err != nil || len(got) != len(data) || bytes.Contains(got, []byte(testValue)) {
			t.Fatalf("scrub of %q: %q %v", data, got, err)
		}
	})
}

func TestBrokerPassthroughAndPlainHTTP(t *testing.T) {
	t.Setenv("BROKER_TEST_TOKEN", testValue)
	up := newUpstream(t)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "plain %s", r.Header.Get("Authorization"))
	}))
	t.Cleanup(plain.Close)
	pport := strings.TrimPrefix(plain.URL, "http://127.0.0.1:")
	yaml := fmt.Sprintf(`network:
  allow: ["127.0.0.1"]
  passthrough: ["127.0.0.1:%s"]
secrets:
  TOKEN: {from: "env:BROKER_TEST_TOKEN", hosts: ["127.0.0.1:%s"], allow_plaintext: true}
`, upstreamPort(up), pport)
	pol := mustPolicy(t, yaml)
	ca, _ := NewCA("t")
	b := &Broker{CA: ca, Rules: pol, Secrets: []Secret{{Spec: pol.Secrets()[0], Placeholder: testPlaceholder, Value: testValue}}}
	h := startProxy(t, yaml, nil, func(c *Config) { c.Broker = b })
	pu, _ := url.Parse("http://" + h.addr)
	// The passthrough host is a plain tunnel: the client sees the
	// upstream's own certificate, not the session CA's.
	roots := x509.NewCertPool()
	roots.AddCert(up.Certificate())
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := c.Get(up.URL + "/x")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("passthrough: %v %v", resp, err)
	}
	resp.Body.Close()
	c.CloseIdleConnections()
	ev := (&brokerHarness{harness: h}).waitFor(t, func(e Event) bool { return e.Method == "CONNECT" })
	if ev.Intercept || !strings.Contains(ev.Reason, "passthrough") {
		t.Errorf("passthrough event %+v", ev)
	}
	// Plain http:// through the broker: substituted for the secret's host
	// (allow_plaintext).
	pc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	req, _ := http.NewRequest("GET", plain.URL+"/p", nil)
	req.Header.Set("Authorization", "Bearer "+testPlaceholder)
	resp, err = pc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(string(got), testValue) || !strings.Contains(string(got), "plain Bearer ****") {
		t.Errorf("plain http: %d %q", resp.StatusCode, got)
	}
}

func TestBrokerBoundsRequestHeads(t *testing.T) {
	bh := startBroker(t, "", nil)
	resp, err := bh.client.Do(func() *http.Request {
		req, _ := http.NewRequest("GET", bh.good.URL+"/x", nil)
		req.Header.Set("X-Big", strings.Repeat("a", 64<<10))
		return req
	}())
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a 64 KiB request head went through: %d", resp.StatusCode)
	}
	if _, paths := bh.good.seen(); len(paths) != 0 {
		t.Errorf("upstream got %q", paths)
	}
}

func FuzzPlaceholderSubstitution(f *testing.F) {
	f.Add("Bearer "+testPlaceholder, "X-Token")
	f.Add("Basic "+base64.StdEncoding.EncodeToString([]byte("x:"+testPlaceholder)), "Authorization")
	f.Fuzz(func(t *testing.T, v, name string) {
		h := http.Header{}
		h.Set("X-A", v)
		req := &http.Request{Header: h, RequestURI: "/"}
		b := &Broker{Secrets: []Secret{{Spec: &policy.Secret{Headers: []string{"X-A"}}, Placeholder: testPlaceholder, Value: testValue}}}
		used, _ := b.placeholdersIn(req)
		found := len(used) > 0
		substitute(h, []string{"X-A"}, testPlaceholder, testValue)
		got := h.Get("X-A")
		if !found && got != v {
			t.Fatalf("changed a header without the placeholder: %q -> %q", v, got)
		}
		if found && strings.Contains(got, testPlaceholder) && !strings.Contains(strings.ReplaceAll(v, testPlaceholder, ""), testPlaceholder) {
			t.Fatalf("placeholder left in %q -> %q", v, got)
		}
	})
}

func TestScrubEncodedForms(t *testing.T) {
	vals := newScrubber([]string{testValue})
	for _, prefix := range []string{"", "x", "x:", "abc:"} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			in := enc.EncodeToString([]byte(prefix + testValue + "-suffix"))
			out, _ := io.ReadAll(newScrubReader(strings.NewReader(in), vals))
			if masked := strings.Count(string(out), "*"); masked < (len(testValue)-4)/3*4 {
				t.Errorf("base64 of %q: %d characters masked in %q", prefix+testValue, masked, out)
			}
		}
	}
	out, _ := io.ReadAll(newScrubReader(strings.NewReader("h="+hex.EncodeToString([]byte(testValue))), vals))
	if strings.Contains(string(out), hex.EncodeToString([]byte(testValue))) {
		t.Errorf("hex not scrubbed: %q", out)
	}
}

func TestBrokerPlaceholderInBody(t *testing.T) {
	bh := startBroker(t, "", nil)
	body := `{"token": "` + testPlaceholder + `"}`
	if resp, _ := bh.do(t, "POST", bh.other.URL+"/collect", nil, body); resp.StatusCode != 403 {
		t.Errorf("placeholder in a body to another host: %d, want 403", resp.StatusCode)
	}
	ev := bh.waitFor(t, func(e Event) bool { return e.Path == "/collect" })
	if ev.Alarm != KindSecretMisuse || ev.Secret != "TOKEN" {
		t.Errorf("event %+v", ev)
	}
	if got := bh.other.all(); len(got) != 0 {
		t.Errorf("other upstream got %q", got)
	}
	// To its own host a body placeholder goes as is: bodies are never
	// substituted.
	big := body + strings.Repeat(" ", 100<<10) // longer than what is read ahead
	resp, got := bh.do(t, "POST", bh.good.URL+"/api", nil, big)
	if resp.StatusCode != 200 || !strings.Contains(got, fmt.Sprintf("body=%d", len(big))) {
		t.Errorf("own host: %d %q", resp.StatusCode, got)
	}
}
