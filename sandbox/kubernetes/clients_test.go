package kubernetes

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// NewClients speaks to an API server as the full clientset does: the
// version from discovery, a pod list from the core group, a runtime class
// from node.k8s.io, a network policy list from networking.k8s.io, all on
// one configuration (its user agent on every request); a QPS without a
// burst is refused.
func TestNewClientsTalksToTheAPIServer(t *testing.T) {
	var mu sync.Mutex
	var paths, agents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths, agents = append(paths, r.URL.Path), append(agents, r.UserAgent())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/version":
			_, _ = w.Write([]byte(`{"major":"1","minor":"34","gitVersion":"v1.34.0"}`))
		case "/api/v1/namespaces/agentbox/pods":
			_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"p1"}}]}`))
		case "/apis/node.k8s.io/v1/runtimeclasses/gvisor":
			_, _ = w.Write([]byte(`{"kind":"RuntimeClass","apiVersion":"node.k8s.io/v1","metadata":{"name":"gvisor"},"handler":"runsc"}`))
		case "/apis/networking.k8s.io/v1/namespaces/agentbox/networkpolicies":
			_, _ = w.Write([]byte(`{"kind":"NetworkPolicyList","apiVersion":"networking.k8s.io/v1","items":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cs, err := NewClients(&rest.Config{Host: srv.URL, QPS: 50, Burst: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if v, err := cs.Discovery().ServerVersion(); err != nil || v.GitVersion != "v1.34.0" {
		t.Errorf("server version: %v %v", v, err)
	}
	if l, err := cs.CoreV1().Pods("agentbox").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 1 || l.Items[0].Name != "p1" {
		t.Errorf("pods: %v %v", l, err)
	}
	if rc, err := cs.NodeV1().RuntimeClasses().Get(ctx, "gvisor", metav1.GetOptions{}); err != nil || rc.Handler != "runsc" {
		t.Errorf("runtime class: %v %v", rc, err)
	}
	if _, err := cs.NetworkingV1().NetworkPolicies("agentbox").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("network policies: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 4 {
		t.Errorf("requests: %v", paths)
	}
	for _, a := range agents {
		if a == "" || a != agents[0] || strings.Contains(a, "Go-http-client") {
			t.Errorf("user agents %q: want the client's one on every request", agents)
			break
		}
	}
	if _, err := NewClients(&rest.Config{Host: srv.URL, QPS: 5}); err == nil || !strings.Contains(err.Error(), "burst") {
		t.Errorf("QPS without burst: %v", err)
	}
}
