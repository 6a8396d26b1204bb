package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// Kubeconfig returns the kubeconfig of the test cluster: $KUBECONFIG when
// it names a file, else <repo>/.k8s/kubeconfig (make k8s-up writes it).
// Without one the test skips, or fails with AGENTBOX_REQUIRE_K8S=1;
// AGENTBOX_NO_K8S=1 (make unit) skips even when a cluster is up.
func Kubeconfig(t testing.TB) string {
	t.Helper()
	if os.Getenv("AGENTBOX_NO_K8S") == "1" {
		t.Skip("AGENTBOX_NO_K8S=1 (make unit): no Kubernetes cluster is used")
	}
	cands := []string{filepath.Join(RepoRoot(), ".k8s", "kubeconfig")}
	if k := os.Getenv("KUBECONFIG"); k != "" {
		cands = append([]string{k}, cands...)
	}
	for _, p := range cands {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	if os.Getenv("AGENTBOX_REQUIRE_K8S") == "1" {
		t.Fatalf("no Kubernetes test cluster (KUBECONFIG or %s) and AGENTBOX_REQUIRE_K8S=1: run make k8s-up", cands[len(cands)-1])
	}
	t.Skip("no Kubernetes test cluster (set KUBECONFIG, or make k8s-up); set AGENTBOX_REQUIRE_K8S=1 to fail instead")
	return ""
}
