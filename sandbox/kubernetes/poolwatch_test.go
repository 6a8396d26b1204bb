package kubernetes

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A process that keeps a pool claims from its watched view of the idle
// pods: once the view has the pods, a claim lists nothing (one round trip
// fewer), and a pod claimed since it was watched (by another process) is
// a conflict the claim moves past.
func TestPoolClaimsFromWatch(t *testing.T) {
	cs := fake.NewClientset()
	rt := New(cs, nil, Options{Pool: 2})
	defer rt.Close(context.Background())
	cfg := testConfig(t)
	p := rt.pools.get(genericPod(cfg, 1234, 1234), true)
	claimSel := labels.SelectorFromSet(labels.Set{labelPool: p.key, labelPoolState: poolIdle}).String()
	var claimLists atomic.Int32
	cs.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.ListAction).GetListRestrictions().Labels.String() == claimSel {
			claimLists.Add(1)
		}
		return false, nil, nil
	})
	ctx := context.Background()
	pods := cs.CoreV1().Pods("agentbox")
	// The fake cluster runs nothing: make the pool's pods Ready by hand.
	deadline := time.Now().Add(time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the pool's pods never showed in its watched view as Ready (%d in view)", len(p.watched.idle()))
		}
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: p.ownIdle()})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			pod := &list.Items[i]
			if pod.Status.Phase != corev1.PodRunning {
				pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: time.Now()},
					Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
					ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
				if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		ready := 0
		for _, pod := range p.watched.idle() {
			if servable(&pod, 0, 0) == "" {
				ready++
			}
		}
		if ready == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := claimLists.Load()
	s := &session{rt: rt, id: sandbox.NewID(), cfg: cfg}
	got, why, err := p.claim(ctx, s, noGuard)
	if err != nil || got == nil {
		t.Fatalf("claim: %v %q", err, why)
	}
	if n := claimLists.Load() - before; n != 0 {
		t.Fatalf("the claim listed the pool %d times; want its watched view used", n)
	}
	if got.Labels[labelPoolState] != poolClaimed || got.Labels[sandbox.LabelSession] != s.id {
		t.Fatalf("claimed pod labels %v", got.Labels)
	}
	// Both watched pods are claimed from behind the view's back but one:
	// a stale view costs conflicts, never a pod handed out twice.
	for _, pod := range p.watched.idle() {
		if pod.Name == got.Name {
			continue
		}
		pod.Labels[labelPoolState] = poolClaimed
		if _, err := pods.Update(ctx, &pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s2 := &session{rt: rt, id: sandbox.NewID(), cfg: cfg}
	got2, _, err := p.claim(ctx, s2, noGuard)
	if err != nil {
		t.Fatal(err)
	}
	if got2 != nil && (got2.Name == got.Name || got2.Labels[sandbox.LabelSession] != s2.id) {
		t.Fatalf("second claim got %s (first %s)", got2.Name, got.Name)
	}
}
