package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
)

func upstreamHTTP(t *testing.T) (*httptest.Server, int) {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s host=%s body=%s ua=%q pa=%q", r.Method, r.URL.RequestURI(), r.Host, b,
			r.Header.Get("User-Agent"), r.Header.Get("Proxy-Authorization"))
	}))
	t.Cleanup(ts.Close)
	return ts, ts.Listener.Addr().(*net.TCPAddr).Port
}

func TestConnectAllowed(t *testing.T) {
	_, port := upstreamHTTP(t)
	h := startProxy(t, `network: {allow: ["up.test", "127.0.0.1"]}`, map[string][]netip.Addr{"up.test": loopback})
	target := hostport("up.test", port)
	c, br, resp := rawRequest(t, h.addr, "CONNECT "+target+" HTTP/1.1\nHost: "+target+"\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body(t, resp))
	}
	fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: up.test\r\nConnection: close\r\n\r\n")
	r2, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := body(t, r2); !strings.HasPrefix(got, "GET /x host=up.test") {
		t.Errorf("upstream saw %q", got)
	}
	c.Close()
	evs := h.waitEvents(t, 1)
	e := evs[0]
	if len(evs) != 1 || e.Decision != Allow || e.Rule != "network.allow[0]" || e.Host != "up.test" || e.Port != port ||
		e.Addr != hostport("127.0.0.1", port) || e.BytesUp == 0 || e.BytesDown == 0 || e.Method != "CONNECT" || e.Status != 200 {
		t.Errorf("event %+v", evs)
	}
}

func TestPlainHTTP(t *testing.T) {
	_, port := upstreamHTTP(t)
	h := startProxy(t, `network: {allow: ["up.test", "127.0.0.1"]}`, map[string][]netip.Addr{"up.test": loopback})
	pu, _ := url.Parse("http://" + h.addr)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://up.test:%d/p?q=1", port), strings.NewReader("hello"))
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got := body(t, resp)
	resp.Body.Close()
	want := fmt.Sprintf(`POST /p?q=1 host=up.test:%d body=hello ua="Go-http-client/1.1" pa=""`, port)
	if resp.StatusCode != 200 || got != want {
		t.Errorf("status %d, upstream saw %q, want %q", resp.StatusCode, got, want)
	}
	e := h.waitEvents(t, 1)[0]
	if e.Decision != Allow || e.Method != "POST" || e.Status != 200 || e.BytesUp == 0 || e.BytesDown == 0 {
		t.Errorf("event %+v", e)
	}
}

func TestHTTPSThroughConnect(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls ok") }))
	defer ts.Close()
	port := ts.Listener.Addr().(*net.TCPAddr).Port
	h := startProxy(t, `network: {allow: ["example.com:`+fmt.Sprint(port)+`", "127.0.0.0/8"]}`,
		map[string][]netip.Addr{"example.com": loopback})
	pu, _ := url.Parse("http://" + h.addr)
	tr := ts.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(pu)
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(fmt.Sprintf("https://example.com:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	if got := body(t, resp); got != "tls ok" {
		t.Errorf("got %q", got)
	}
	resp.Body.Close()
	tr.CloseIdleConnections()
	if e := h.waitEvents(t, 1)[0]; e.Decision != Allow || e.Method != "CONNECT" {
		t.Errorf("event %+v", e)
	}
}

// TestRefusals runs each refused attempt for real and checks the answer
// line, that nothing reached the upstream, and the one event.
func TestRefusals(t *testing.T) {
	reached := make(chan string, 100)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached <- r.Host }))
	defer ts.Close()
	port := ts.Listener.Addr().(*net.TCPAddr).Port
	otherPort := tcpServer(t, func(c net.Conn) { reached <- "other port" })
	h := startProxy(t, fmt.Sprintf(`network:
  allow: ["up.test:%d", "loop.test", "127.0.0.1:%d", "mixed.test", "meta.test"]
  deny: ["bad.up.test"]
`, port, otherPort), map[string][]netip.Addr{
		"up.test": loopback, "loop.test": loopback, "bad.up.test": loopback,
		"mixed.test": {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")},
		"meta.test":  {netip.MustParseAddr("169.254.169.254")},
	})
	p := fmt.Sprint(port)
	cases := []struct {
		name, head string
		status     int
		line, rule string
	}{
		{"host not allowed", "CONNECT example.com:443 HTTP/1.1", 403,
			"agentbox: example.com:443 refused: not in network.allow", "network.allow"},
		{"port not allowed", "CONNECT up.test:444 HTTP/1.1", 403, "agentbox: up.test:444 refused: not in network.allow", "network.allow"},
		{"denied", "CONNECT bad.up.test:" + p + " HTTP/1.1", 403, `matched network.deny[0] "bad.up.test"`, "network.deny[0]"},
		{"name to loopback", "CONNECT loop.test:" + p + " HTTP/1.1", 403,
			"agentbox: loop.test:" + p + " refused: resolves to 127.0.0.1 (loopback) and no IP rule allows it", "network.allow"},
		{"one address of several", "CONNECT mixed.test:80 HTTP/1.1", 403, "resolves to 127.0.0.1 (loopback)", "network.allow"},
		{"metadata", "CONNECT meta.test:80 HTTP/1.1", 403, "169.254.169.254 (cloud metadata)", "network.allow"},
		{"IP rule wrong port", "CONNECT 127.0.0.1:" + p + " HTTP/1.1", 403, "not in network.allow", "network.allow"},
		{"plain http not allowed", "GET http://example.com/ HTTP/1.1\nHost: example.com", 403, "example.com:80 refused: not in network.allow", "network.allow"},
		{"decimal", "CONNECT 2130706433:" + p + " HTTP/1.1", 403, "ambiguous IPv4 literal", RuleRequest},
		{"hex", "CONNECT 0x7f.1:" + p + " HTTP/1.1", 403, "ambiguous", RuleRequest},
		{"octal", "CONNECT 0177.0.0.1:" + p + " HTTP/1.1", 403, "ambiguous", RuleRequest},
		{"short", "CONNECT 127.1:" + p + " HTTP/1.1", 403, "ambiguous", RuleRequest},
		{"short in URI", "GET http://127.1:" + p + "/ HTTP/1.1", 403, "ambiguous", RuleRequest},
		{"mapped v6", "CONNECT [::ffff:127.0.0.1]:" + p + " HTTP/1.1", 403, "IPv4 address written as IPv6", RuleRequest},
		{"mapped v6 hex", "CONNECT [::ffff:7f00:1]:" + p + " HTTP/1.1", 403, "IPv4 address written as IPv6", RuleRequest},
		{"NUL", "CONNECT up.test\x00.evil:" + p + " HTTP/1.1", 403, "NUL in host", RuleRequest},
		{"tab", "CONNECT up.test\t:" + p + " HTTP/1.1", 403, "whitespace", RuleRequest},
		{"trailing dot", "CONNECT up.test.:" + p + " HTTP/1.1", 403, "trailing dot", RuleRequest},
		{"userinfo", "GET http://up.test:" + p + "@evil.test/ HTTP/1.1", 403, "userinfo", RuleRequest},
		{"userinfo CONNECT", "CONNECT user@up.test:" + p + " HTTP/1.1", 403, "userinfo", RuleRequest},
		{"percent", "GET http://up%2etest:" + p + "/ HTTP/1.1", 403, "percent", RuleRequest},
		{"zone", "CONNECT [fe80::1%25eth0]:" + p + " HTTP/1.1", 403, "percent", RuleRequest},
		{"host header differs", "CONNECT up.test:" + p + " HTTP/1.1\nHost: evil.test:" + p, 403, `Host header "evil.test:` + p + `" differs`, RuleRequest},
		{"host header differs in URI", "GET http://up.test:" + p + "/ HTTP/1.1\nHost: evil.test", 403, "differs", RuleRequest},
		{"host header port differs", "GET http://up.test:" + p + "/ HTTP/1.1\nHost: up.test", 403, "differs", RuleRequest},
		{"two host headers", "GET http://up.test:" + p + "/ HTTP/1.1\nHost: up.test:" + p + "\nHost: up.test:" + p, 403, "more than one Host", RuleRequest},
		{"origin form", "GET / HTTP/1.1\nHost: up.test", 400, "send an absolute URI", RuleRequest},
		{"https URI", "GET https://up.test/ HTTP/1.1", 400, "use CONNECT", RuleRequest},
		{"ftp URI", "GET ftp://up.test/ HTTP/1.1", 400, "only http://", RuleRequest},
		{"TRACE", "TRACE http://up.test:" + p + "/ HTTP/1.1", 405, "not supported", RuleRequest},
		{"CONNECT without port", "CONNECT up.test HTTP/1.1", 403, "missing port", RuleRequest},
		{"HTTP/2 preface", "PRI * HTTP/2.0", 400, "unsupported protocol", RuleRequest},
		{"garbage", "hello", 400, "malformed request line", RuleRequest},
		{"folded header", "GET http://up.test:" + p + "/ HTTP/1.1\nX: a\n b", 400, "folded", RuleRequest},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, resp := rawRequest(t, h.addr, c.head+"\n")
			line := strings.TrimSuffix(body(t, resp), "\n")
			if resp.StatusCode != c.status || !strings.Contains(line, c.line) || strings.Contains(line, "\n") || !strings.HasPrefix(line, "agentbox: ") {
				t.Errorf("got %d %q; want %d containing %q", resp.StatusCode, line, c.status, c.line)
			}
			evs := h.waitEvents(t, i+1)
			if len(evs) != i+1 {
				t.Fatalf("%d events after %d attempts", len(evs), i+1)
			}
			if e := evs[i]; e.Decision != Deny || e.Rule != c.rule || e.Reason != strings.TrimPrefix(line, "agentbox: ") || e.BytesUp != 0 {
				t.Errorf("event %+v, want deny by %s", e, c.rule)
			}
		})
	}
	select {
	case got := <-reached:
		t.Errorf("a refused attempt reached the upstream (%s)", got)
	default:
	}
}

func TestIPRuleAllows(t *testing.T) {
	port := tcpServer(t, echo)
	h := startProxy(t, fmt.Sprintf(`network: {allow: ["127.0.0.1:%d", "loop.test"]}`, port),
		map[string][]netip.Addr{"loop.test": loopback})
	for _, target := range []string{hostport("127.0.0.1", port), hostport("loop.test", port)} {
		c, br, resp := rawRequest(t, h.addr, "CONNECT "+target+" HTTP/1.1\n")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", target, resp.StatusCode, body(t, resp))
		}
		io.WriteString(c, "ping")
		c.(*net.TCPConn).CloseWrite()
		if b, err := io.ReadAll(br); err != nil || string(b) != "ping" {
			t.Errorf("%s: echo %q %v", target, b, err)
		}
	}
	for _, e := range h.waitEvents(t, 2) {
		if e.Decision != Allow || e.BytesUp != 4 || e.BytesDown != 4 {
			t.Errorf("event %+v", e)
		}
	}
}

// TestNoRebinding: the name is resolved once and the address checked is
// the address dialed, whatever a second lookup would say.
func TestNoRebinding(t *testing.T) {
	port := tcpServer(t, echo)
	h := startProxy(t, fmt.Sprintf(`network: {allow: ["rebind.test", "127.0.0.1:%d"]}`, port),
		map[string][]netip.Addr{"rebind.test": {netip.MustParseAddr("::ffff:127.0.0.1")}})
	c, br, resp := rawRequest(t, h.addr, "CONNECT "+hostport("rebind.test", port)+" HTTP/1.1\n")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body(t, resp))
	}
	c.(*net.TCPConn).CloseWrite()
	io.ReadAll(br)
	e := h.waitEvents(t, 1)[0]
	h.res.mu.Lock()
	calls := h.res.calls
	h.res.mu.Unlock()
	if calls != 1 || e.Addr != hostport("127.0.0.1", port) {
		t.Errorf("lookups %d, dialed %q", calls, e.Addr)
	}
}

func TestUnresolvable(t *testing.T) {
	h := startProxy(t, `network: {allow: ["nowhere.test"]}`, nil)
	_, _, resp := rawRequest(t, h.addr, "CONNECT nowhere.test:443 HTTP/1.1\n")
	if line := body(t, resp); resp.StatusCode != 502 || !strings.Contains(line, "cannot resolve") {
		t.Errorf("%d %q", resp.StatusCode, line)
	}
	if e := h.waitEvents(t, 1)[0]; e.Decision != Allow || e.Status != 502 || !strings.HasPrefix(e.Err, "resolve:") {
		t.Errorf("event %+v", e)
	}
}

func TestHeadLimits(t *testing.T) {
	h := startProxy(t, "", nil, func(c *Config) { c.MaxHeaderBytes = 2048 })
	_, _, resp := rawRequest(t, h.addr, "GET http://x.test/ HTTP/1.1\nX: "+strings.Repeat("a", 4096)+"\n")
	if resp.StatusCode != 431 {
		t.Errorf("status %d", resp.StatusCode)
	}
	h.waitEvents(t, 1)
}

func TestHeadTimeout(t *testing.T) {
	h := startProxy(t, "", nil, func(c *Config) { c.HeaderTimeout = 50e6 })
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT x.test:443 HTTP/1.1\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 408 {
		t.Fatalf("%v %v", resp, err)
	}
	if e := h.waitEvents(t, 1)[0]; e.Decision != Deny || e.Status != 408 {
		t.Errorf("event %+v", e)
	}
}

// TestEventsAudited: the events of allowed and refused attempts become net
// records that the audit log takes and verifies, and that replay under
// the same policy leaves unchanged.
func TestEventsAudited(t *testing.T) {
	port := tcpServer(t, echo)
	rules := fmt.Sprintf(`network: {allow: ["up.test", "127.0.0.1:%d"]}`, port)
	h := startProxy(t, rules, map[string][]netip.Addr{"up.test": loopback})
	for _, target := range []string{hostport("up.test", port), "example.com:443", hostport("127.1", port)} {
		c, _, _ := rawRequest(t, h.addr, "CONNECT "+target+" HTTP/1.1\n")
		c.Close()
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range h.waitEvents(t, 3) {
		if err := w.Append(e.Record("0123456789abcdef")); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ch, err := audit.Replay(f, netReplayer{mustPolicy(t, rules)})
	if err != nil || len(ch) != 0 {
		t.Errorf("replay under the same policy: %v %+v", err, ch)
	}
	f.Seek(0, 0)
	ch, err = audit.Replay(f, netReplayer{mustPolicy(t, `network: {allow: ["example.com"]}`)})
	news := map[string]string{}
	for _, c := range ch {
		news[strings.Fields(c.Summary)[0]] = c.Old + ">" + c.New
	}
	if err != nil || len(ch) != 2 || news["example.com:443"] != "deny>allow" || news[hostport("up.test", port)] != "allow>deny" {
		t.Errorf("replay under another policy: %v %+v", err, ch)
	}
	f.Seek(0, 0)
	if rep, err := audit.Verify(f, nil, ""); err != nil || !rep.Intact || rep.Records != 3 {
		t.Errorf("verify: %v %+v", err, rep)
	}
}

// TestPipelinedRequestNotForwarded: a second request sent behind an
// allowed one on the same connection never reaches the upstream (it could
// name another host).
func TestPipelinedRequestNotForwarded(t *testing.T) {
	seen := make(chan string, 10)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Host + r.URL.Path
	}))
	defer ts.Close()
	port := ts.Listener.Addr().(*net.TCPAddr).Port
	h := startProxy(t, `network: {allow: ["up.test", "127.0.0.1"]}`, map[string][]netip.Addr{"up.test": loopback})
	first := fmt.Sprintf("POST http://up.test:%d/one HTTP/1.1\r\nHost: up.test:%d\r\nContent-Length: 3\r\n\r\nabc", port, port)
	second := fmt.Sprintf("GET http://evil.test:%d/two HTTP/1.1\r\nHost: evil.test:%d\r\n\r\n", port, port)
	c, br, resp := rawRequest(t, h.addr, strings.TrimSuffix(strings.ReplaceAll(first+second, "\r\n", "\n"), "\n"))
	defer c.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	io.Copy(io.Discard, resp.Body)
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Errorf("a second response came back: %q", rest)
	}
	h.waitEvents(t, 1)
	close(seen)
	var got []string
	for s := range seen {
		got = append(got, s)
	}
	if len(got) != 1 || got[0] != fmt.Sprintf("up.test:%d/one", port) {
		t.Errorf("upstream saw %q", got)
	}
}
