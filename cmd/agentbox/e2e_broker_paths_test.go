package main_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// pathsProbe sends each request through the proxy with python's
// http.client (which sends the path exactly as written) and prints the
// statuses.
const pathsProbe = `import http.client, json, os, ssl, sys
ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
px = os.environ["HTTPS_PROXY"].split("//")[1].strip("/").split(":")
out = []
for line in sys.stdin.read().splitlines():
    scheme, port, path, auth = line.split(" ")
    if scheme == "https":
        c = http.client.HTTPSConnection(px[0], int(px[1]), context=ctx, timeout=30)
        c.set_tunnel("127.0.0.1", int(port))
        target = path
    else:
        c = http.client.HTTPConnection(px[0], int(px[1]), timeout=30)
        target = "http://127.0.0.1:" + port + path
    h = {"Authorization": "Bearer " + os.environ[auth]} if auth != "none" else {}
    try:
        c.request("GET", target, headers=h)
        r = c.getresponse()
        out.append([line, r.status, r.getheader("X-Agentbox-Reason") or "", r.read().decode(errors="replace")[:80]])
    except Exception as e:
        out.append([line, 0, str(e), ""])
print("PATHS " + json.dumps(out))
`

// TestBrokerPathsTLSOnlyEffect: through the real binary, against an
// upstream that ignores case, merges slashes and resolves dot segments,
// every variant of a denied path is refused before it leaves the host
// (with and without the placeholder), allowed variants work, an encoded
// slash is refused; the placeholder is refused over plain HTTP and to a
// port a portless secret host does not name, and the value never reaches
// those upstreams. The four allowed requests have receipts, each refused
// placeholder a secret_misuse alarm.
func TestBrokerPathsTLSOnlyEffect(t *testing.T) { brokerPathsTLSOnly(t, dockerBroker(t)) }

func brokerPathsTLSOnly(t *testing.T, be brokerEnv) {
	const value = "pathsE2Evalue-1c9f44a0b7"
	ca := newTestCA(t)
	var mu sync.Mutex
	var seen []string
	record := func(r *http.Request) string {
		p := strings.ToLower(path.Clean("/" + r.URL.Path)) // as a lenient server reads it
		mu.Lock()
		seen = append(seen, p+" auth="+r.Header.Get("Authorization"))
		mu.Unlock()
		return p
	}
	lenient := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := record(r); strings.HasPrefix(p, "/admin") || p == "/user/keys" {
			fmt.Fprint(w, "SENSITIVE")
			return
		}
		fmt.Fprint(w, "ok")
	})
	port := ca.serve(t, lenient)
	plain := httptest.NewServer(lenient)
	t.Cleanup(plain.Close)
	_, plainPort, _ := net.SplitHostPort(plain.Listener.Addr().String())
	other := ca.serve(t, lenient) // the portless secret's host, on a port other than 443

	dir := t.TempDir()
	caFile := writeFile(t, filepath.Join(dir, "upstream-ca.pem"), string(ca.pem), 0o644)
	pol := writeFile(t, filepath.Join(dir, "paths.yaml"), fmt.Sprintf(`version: 1
extends: none
commands: {default: allow}
sandbox: {network: proxy%[4]s}
network:
  allow: ["127.0.0.1"]
  upstream_ca: %[1]s
  rules:
    - {host: "127.0.0.1:%[2]s", paths: ["/admin/**", "/user/keys"], action: deny}
    - {host: "127.0.0.1:%[2]s", methods: [GET], paths: ["/repos/me/**"], action: allow}
    - {host: "127.0.0.1:%[2]s", action: deny}
secrets:
  TOKEN: {from: "env:PATHS_E2E_TOKEN", hosts: ["127.0.0.1:%[2]s", "127.0.0.1:%[3]s"]}
  OTHER: {from: "env:PATHS_E2E_TOKEN", hosts: ["127.0.0.1"]}
`, caFile, port, plainPort, be.sandbox), 0o644)
	type req struct {
		line string
		want int
	}
	var reqs []req
	for _, p := range []string{"/ADMIN/keys", "/Admin/keys", "//admin//keys", "/admin", "/x/../admin/keys", "/x/%2e%2e/admin/keys",
		"/%61dmin/keys", "/%41DMIN/keys", "/user/keys/", "/USER/Keys", "/user//keys", "/admin%2Fkeys", "/repos/me%2F..%2F..%2Fadmin"} {
		reqs = append(reqs, req{"https " + port + " " + p + " TOKEN", 403}, req{"https " + port + " " + p + " none", 403})
	}
	for _, p := range []string{"/repos/me/x", "/REPOS/ME/x", "//repos//me/x/", "/repos/me/./y"} {
		reqs = append(reqs, req{"https " + port + " " + p + " TOKEN", 200})
	}
	reqs = append(reqs,
		req{"http " + plainPort + " /repos/me/x TOKEN", 403}, // plain HTTP: never substituted
		req{"http " + plainPort + " /repos/me/x none", 200},  // without the placeholder it is an ordinary request
		req{"https " + other + " /repos/me/x OTHER", 403},    // OTHER's portless host means 443, not this port
	)
	var stdin strings.Builder
	for _, r := range reqs {
		stdin.WriteString(r.line + "\n")
	}
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "probe.py"), pathsProbe, 0o644)
	writeFile(t, filepath.Join(ws, "reqs.txt"), stdin.String(), 0o644)
	log := filepath.Join(dir, "audit.jsonl")
	r := be.run(t, []string{"PATHS_E2E_TOKEN=" + value}, "exec", "--workspace", ws, "--policy", pol, "--audit", log, "--", "python3 probe.py < reqs.txt")
	if r.code != 0 {
		t.Fatalf("exec: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	_, js, ok := strings.Cut(r.stdout, "PATHS ")
	if !ok {
		t.Fatalf("no probe output: %s %s", r.stdout, r.stderr)
	}
	var got [][]any
	var placeholders403 int // refused requests that carried a placeholder
	if err := json.Unmarshal([]byte(strings.TrimSpace(js)), &got); err != nil || len(got) != len(reqs) {
		t.Fatalf("probe output %v: %s", err, js)
	}
	for i, g := range got {
		if int(g[1].(float64)) != reqs[i].want || strings.Contains(g[3].(string), "SENSITIVE") {
			t.Errorf("%s: %v %q %q, want %d", reqs[i].line, g[1], g[2], g[3], reqs[i].want)
		}
		if reqs[i].want == 403 && g[2].(string) == "" {
			t.Errorf("%s: refused without a reason", reqs[i].line)
		}
		if reqs[i].want == 403 && !strings.HasSuffix(reqs[i].line, " none") {
			placeholders403++
		}
	}
	recs := brokerAudit(t, log, value)
	rc, alarms := receipts(recs, "TOKEN"), misuseAlarms(recs)
	for _, rec := range rc {
		if rec.Status != 200 || len(rec.BodySHA256) != 64 || !strings.HasPrefix(strings.ToLower(path.Clean(rec.Path)), "/repos/me/") {
			t.Errorf("receipt: %s", rec.line)
		}
	}
	if len(rc) != 4 || len(alarms) != placeholders403 {
		t.Errorf("%d receipts (want 4), %d secret_misuse alarms (want %d, one per refused placeholder)", len(rc), len(alarms), placeholders403)
	}
	mu.Lock()
	defer mu.Unlock()
	var withValue int
	for _, s := range seen {
		if strings.Contains(s, "/admin") || strings.Contains(s, "/user/keys") {
			t.Errorf("a denied path reached the upstream: %s", s)
		}
		if strings.Contains(s, value) {
			withValue++
		}
	}
	// Only the four allowed TLS requests carried the value.
	if withValue != 4 {
		t.Errorf("the value reached the upstreams %d times, want 4: %q", withValue, seen)
	}
	if strings.Contains(r.stdout+r.stderr, value) {
		t.Error("the value reached the terminal")
	}
}
