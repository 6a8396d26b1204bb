package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// quota is a ResourceQuota whose status the (fake) cluster has computed.
func quota(name string, scopes []corev1.ResourceQuotaScope, hardUsed ...string) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "agentbox"}, Spec: corev1.ResourceQuotaSpec{Scopes: scopes},
		Status: corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{}, Used: corev1.ResourceList{}}}
	for i := 0; i+2 < len(hardUsed); i += 3 {
		r := corev1.ResourceName(hardUsed[i])
		q.Status.Hard[r], q.Status.Used[r] = resource.MustParse(hardUsed[i+1]), resource.MustParse(hardUsed[i+2])
	}
	q.Spec.Hard = q.Status.Hard
	return q
}

// The pool's room under the namespace's quotas: the tightest quota that
// counts its pods, less one session pod; quotas whose scopes leave pool
// pods out, and resources they do not use, do not bound it.
func TestPoolBudgetRoom(t *testing.T) {
	cfg := testConfig(t)
	cfg.CPUs, cfg.MemoryBytes = 0.5, 256<<20
	for _, tc := range []struct {
		name   string
		quotas []*corev1.ResourceQuota
		room   int
		why    string
	}{
		{"none", nil, -1, ""},
		{"pods", []*corev1.ResourceQuota{quota("budget", nil, "pods", "5", "1")}, 3, "ResourceQuota budget has pods 1 of 5 used"},
		{"cpu", []*corev1.ResourceQuota{quota("cpu", nil, "requests.cpu", "2", "500m", "services", "1", "0")}, 2, "requests.cpu 500m of 2"},
		{"tightest", []*corev1.ResourceQuota{quota("a", nil, "count/pods", "10", "0"), quota("b", nil, "limits.memory", "1Gi", "512Mi")}, 1, "ResourceQuota b"},
		{"full", []*corev1.ResourceQuota{quota("full", nil, "pods", "3", "3")}, 0, "pods 3 of 3"},
		{"over", []*corev1.ResourceQuota{quota("over", nil, "cpu", "1", "1200m")}, 0, "cpu 1200m of 1"},
		{"not ours", []*corev1.ResourceQuota{quota("nt", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}, "pods", "1", "1"),
			quota("be", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}, "pods", "1", "1")}, -1, ""},
		{"scoped ours", []*corev1.ResourceQuota{quota("t", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}, "pods", "2", "0")}, 1, "ResourceQuota t"},
	} {
		cs := newFake()
		for _, q := range tc.quotas {
			if _, err := cs.CoreV1().ResourceQuotas("agentbox").Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		rt := New(cs, nil, Options{UsePool: true})
		p := rt.pools.get(genericPod(cfg, 1234, 1234), true)
		room, why := p.budgetRoom(context.Background())
		if room != tc.room || !strings.Contains(why, tc.why) || (tc.why == "") != (why == "") {
			t.Errorf("%s: room %d (%q), want %d (%q)", tc.name, room, why, tc.room, tc.why)
		}
	}
}

// A pool bounded by a quota creates only what leaves a session room, and
// says why in one line (the cold start's reason), without the 30 s
// back-off of a refusal.
func TestPoolFillStopsAtBudget(t *testing.T) {
	cs := newFake(quota("budget", nil, "pods", "3", "0"))
	rt := New(cs, nil, Options{UsePool: true})
	p := rt.pools.get(genericPod(testConfig(t), 1234, 1234), true)
	rt.pools.size = 3 // a pool of 3, filled by hand (no refill goroutine)
	err := p.fill(context.Background())
	if !errors.Is(err, errBudget) || !strings.Contains(err.Error(), "ResourceQuota budget has pods 0 of 3 used") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("fill: %v", err)
	}
	list, _ := cs.CoreV1().Pods("agentbox").List(context.Background(), metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{labelPool: p.key}).String()})
	if len(list.Items) != 2 {
		t.Fatalf("%d pool pods under a quota of 3 pods, want 2 (one left for a session)", len(list.Items))
	}
}

// A cold pod the quota refuses says so, not that agentbox lacks rights.
func TestCreateErrorQuota(t *testing.T) {
	rt := New(newFake(), nil, Options{})
	err := rt.createError("the sandbox pod", apierrors.NewForbidden(corev1.Resource("pods"), "agentbox-x",
		errors.New("exceeded quota: budget, requested: pods=1, used: pods=3, limited: pods=3")))
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "ResourceQuota has no room") || strings.Contains(err.Error(), "needs to create pods") {
		t.Fatalf("quota refusal: %v", err)
	}
	err = rt.createError("the sandbox pod", apierrors.NewForbidden(corev1.Resource("pods"), "agentbox-x", errors.New("User cannot create pods")))
	if !strings.Contains(err.Error(), "needs to create pods") {
		t.Fatalf("RBAC refusal: %v", err)
	}
}
