package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// k8sBrokerProbe fetches two paths of the upstream over HTTPS through the
// proxy with python's default trust (SSL_CERT_FILE, the session's bundle)
// and the secret's placeholder in Authorization, and says whether the
// bundle's directory is a read-only file system (EROFS) and whether the
// CA variable reached the command's environment.
const k8sBrokerProbe = `import os, ssl, sys, urllib.request, urllib.error
port = sys.argv[1]
ctx = ssl.create_default_context()
b = os.environ["SSL_CERT_FILE"]
try:
    open(os.path.join(os.path.dirname(b), "planted"), "w").close()
    print("BUNDLE writable")
except OSError as e:
    print("BUNDLE read-only" if e.errno == 30 else "BUNDLE " + str(e), b, "CA" if "BEGIN CERTIFICATE" in open(b).read() else "empty")
print("PEMVAR", "AGENTBOX_TRUST_PEM" in os.environ)
for p in ["/data", "/admin/keys"]:
    req = urllib.request.Request("https://127.0.0.1:%s%s" % (port, p), headers={"Authorization": "Bearer " + os.environ["TOKEN"]})
    try:
        r = urllib.request.urlopen(req, timeout=30, context=ctx)
        print("GOT", p, r.status, r.read().decode())
    except urllib.error.HTTPError as e:
        print("GOT", p, e.code, e.headers.get("X-Agentbox-Reason") or "")
`

// TestK8sBrokerEffect: a broker secret on the cluster, with a policy
// layered on the default. The pod trusts the session CA through the
// bundle an init container writes at /run/agentbox/ca-bundle.pem (mounted
// read-only in the sandbox's container), python gets the upstream's answer over HTTPS, the upstream
// receives the real secret in Authorization, a network.rules deny is
// refused, and the value is nowhere the sandbox sees: output, the
// workspace copy's files, the audit log. The audit log has the receipt of
// /data (the secret, the hash of what was sent) and the secret_misuse
// alarm of the denied request that carried the placeholder. With --pool
// the session still starts cold and says why (its pod carries its CA).
func TestK8sBrokerEffect(t *testing.T) {
	ab := abCmd{fullEnv: k8sEnv(t)}
	var rb [12]byte
	rand.Read(rb[:])
	value := "k8sBroker" + hex.EncodeToString(rb[:])
	ca := newTestCA(t)
	var mu sync.Mutex
	var seen []string
	port := ca.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" auth="+r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprint(w, "upstream-answer")
	}))
	dir := t.TempDir()
	caFile := writeFile(t, filepath.Join(dir, "upstream-ca.pem"), string(ca.pem), 0o644)
	pol := writeFile(t, filepath.Join(dir, "broker.yaml"), fmt.Sprintf(`version: 1
commands: {default: allow}
sandbox:
  network: proxy
  limits: {cpus: 0.5, memory: 512MiB}
network:
  allow: ["127.0.0.1"]
  upstream_ca: %[1]s
  rules:
    - {host: "127.0.0.1:%[2]s", paths: ["/admin/**"], action: deny}
secrets:
  TOKEN: {from: "env:K8S_BROKER_TOKEN", hosts: ["127.0.0.1:%[2]s"]}
`, caFile, port), 0o644)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "probe.py"), k8sBrokerProbe, 0o644)
	log := filepath.Join(dir, "audit.jsonl")
	// NO_PROXY keeps 127.0.0.1 direct (the pod's own); the upstream is the
	// host's, so unset it. The environment and answers land in the
	// workspace copy too.
	ab.fullEnv = append(ab.fullEnv, "K8S_BROKER_TOKEN="+value)
	// With a pool the session still starts cold: its CA is its own.
	r := ab.run(t, "exec", "--pool", "1", "--workspace", ws, "--policy", pol, "--audit", log, "--",
		"env -u NO_PROXY -u no_proxy python3 probe.py "+port+" > out.txt 2>&1; env > env.txt; cat out.txt")
	if r.code != 0 || !strings.Contains(r.stderr, "kubernetes backend") {
		t.Fatalf("exec on kubernetes: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "kubernetes: cold start: the session's CA") {
		t.Errorf("a session with a CA did not say it starts cold:\n%s", r.stderr)
	}
	for _, want := range []string{"BUNDLE read-only /run/agentbox/ca-bundle.pem CA", "PEMVAR False", "GOT /data 200 upstream-answer", "GOT /admin/keys 403 "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the pod's output lacks %q:\n%s\n%s", want, r.stdout, r.stderr)
		}
	}
	if !strings.Contains(r.stdout[strings.Index(r.stdout, "GOT /admin/keys"):], "network.rules") {
		t.Errorf("the deny gives no reason naming the rule:\n%s", r.stdout)
	}
	mu.Lock()
	got := strings.Join(seen, "\n")
	mu.Unlock()
	if got != "/data auth=Bearer "+value {
		t.Errorf("the upstream received %q, want only /data with the real secret (the denied path never leaves the host)", got)
	}
	if strings.Contains(r.stdout+r.stderr, value) {
		t.Error("the secret's value is in the command's output")
	}
	if m := sessionRe.FindStringSubmatch(r.stderr); m != nil {
		if a := ab.run(t, "apply", m[1]); a.code != 0 {
			t.Fatalf("apply: %d %s", a.code, a.stderr)
		}
	}
	env, err := os.ReadFile(filepath.Join(ws, "env.txt"))
	if err != nil || !strings.Contains(string(env), "TOKEN=") || !strings.Contains(string(env), "SSL_CERT_FILE=/run/agentbox/ca-bundle.pem") {
		t.Fatalf("the workspace copy did not come back with the pod's environment (%v): %q", err, env)
	}
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), value) {
				t.Errorf("the secret's value is in the workspace copy's %s", p)
			}
		}
		return nil
	})
	recs := brokerAudit(t, log, value)
	rc, alarms := receipts(recs, "TOKEN"), misuseAlarms(recs)
	if len(rc) != 1 || rc[0].Path != "/data" || rc[0].Status != 200 || len(rc[0].BodySHA256) != 64 {
		t.Errorf("want one receipt, of /data with the body's hash: %d %v", len(rc), rc)
	}
	if len(alarms) != 1 || alarms[0].Secret != "TOKEN" || alarms[0].Path != "/admin/keys" || !strings.Contains(alarms[0].Reason, "rules deny") {
		t.Errorf("want one secret_misuse alarm, of /admin/keys: %d %v", len(alarms), alarms)
	}
	if v := ab.run(t, "audit", "verify", log); v.code != 0 {
		t.Errorf("audit verify: %d %q %q", v.code, v.stdout, v.stderr)
	}
}

// The broker effect tests of the Docker backend, on the test cluster: the
// same upstreams on the host's loopback, reached through the host-side
// proxy that the pod's forwarder carries each connection to over the
// executor's channel, with the connection's processes named first (the
// attribution `during` relies on).
func TestK8sBrokeredSecretsEffect(t *testing.T) { brokeredSecrets(t, k8sBroker(t)) }

func TestK8sBrokerNothingComesBackEffect(t *testing.T) { brokerNothingComesBack(t, k8sBroker(t)) }

func TestK8sBrokerPathsTLSOnlyEffect(t *testing.T) { brokerPathsTLSOnly(t, k8sBroker(t)) }

func TestK8sBrokerDuringProgramEffect(t *testing.T) { brokerDuringProgram(t, k8sBroker(t)) }

// TestK8sBrokerDuringProgramGVisorEffect: the same under gVisor (the
// cluster's RuntimeClass gvisor), whose /proc the executor reads to
// attribute a connection (/proc/net/tcp, /proc/PID/fd) is its own kernel's.
func TestK8sBrokerDuringProgramGVisorEffect(t *testing.T) {
	be := k8sBroker(t)
	cs := k8sClient(t)
	if _, err := cs.NodeV1().RuntimeClasses().Get(context.Background(), "gvisor", metav1.GetOptions{}); err != nil {
		t.Skipf("no RuntimeClass gvisor on the test cluster (make k8s-up installs it where runsc exists): %v", err)
	}
	be.sandbox += ", runtime: gvisor"
	brokerDuringProgram(t, be)
}
