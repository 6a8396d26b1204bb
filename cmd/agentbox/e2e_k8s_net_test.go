package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestK8sNetworkProxy: `exec --network proxy` on the cluster. The pod has
// only lo behind a deny-all NetworkPolicy; its one way out is the
// executor's channel to the host-side proxy: an allowed fetch reaches the
// host's loopback server, a name outside network.allow gets the proxy's
// 403 naming the rule, and both are net events in a log that verifies.
func TestK8sNetworkProxy(t *testing.T) {
	ab := abCmd{fullEnv: k8sEnv(t)}
	f := newProxyFetch(t)
	hits, port := f.hits, f.port
	dir := t.TempDir()
	pol := filepath.Join(dir, "net.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nextends: none\ncommands:\n  default: allow\nnetwork:\n  allow: [\"localhost\", \"127.0.0.0/8\", \"::1\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "audit.jsonl")
	cmd := f.cmd + "\nls /sys/class/net"
	r := ab.run(t, "exec", "--workspace", t.TempDir(), "--policy", pol, "--audit", log, "--network", "proxy", "--", cmd)
	if r.code != 0 || !strings.Contains(r.stdout, "upstream-ok") || !strings.Contains(r.stdout, "403 ") || !strings.Contains(r.stdout, "network.allow") {
		t.Fatalf("exec --network proxy on kubernetes: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if got := strings.Fields(r.stdout[strings.LastIndex(r.stdout, "network.allow"):]); len(got) < 2 || got[len(got)-1] != "lo" || strings.Contains(r.stdout, "eth0") {
		t.Errorf("the pod's interfaces: %q, want lo only", r.stdout)
	}
	if hits.Load() != 1 {
		t.Errorf("upstream hits %d, want 1", hits.Load())
	}
	r = ab.run(t, "audit", "show", log)
	if r.code != 0 || !strings.Contains(r.stdout, "example.invalid:80") || !strings.Contains(r.stdout, "localhost:"+port) {
		t.Errorf("audit show: %d %q", r.code, r.stdout)
	}
	if r := ab.run(t, "audit", "verify", log); r.code != 0 {
		t.Errorf("audit verify: %d %q %q", r.code, r.stdout, r.stderr)
	}
}
