package kubernetes

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// A process that keeps a pool claims from its watched view of the idle
// pods: once the view has the pods, a claim lists nothing (one round trip
// fewer), and a pod claimed since it was watched (by another process) is
// a conflict the claim moves past.
func TestPoolClaimsFromWatch(t *testing.T) {
	cs := newFake()
	versioned(cs)
	rt := New(cs, nil, Options{Pool: 2})
	defer rt.Close(context.Background())
	cfg := testConfig(t)
	claimLists := countClaimLists(cs, cfg)
	p := rt.pools.get(genericPod(cfg, 1234, 1234), true)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("agentbox")
	readyInView(t, cs, p, 2)
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

// readyInView makes the pool's pods Ready by hand (the fake cluster runs
// nothing) until n of them are servable in p's watched view.
func readyInView(t *testing.T, cs *fakeClients, p *pool, n int) {
	t.Helper()
	ctx := context.Background()
	pods := cs.CoreV1().Pods("agentbox")
	deadline := time.Now().Add(time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the pool's pods never showed in its watched view as Ready (%d in view)", len(p.view().idle()))
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
		p.mu.Lock()
		w := p.watched
		p.mu.Unlock()
		for _, pod := range w.idle() {
			if servable(&pod, 0, 0) == "" {
				ready++
			}
		}
		if ready >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A process that keeps no pool but claims from another's (batch, a long
// run with --pool 0) lists the idle pods at its first claim, starts a
// watched view at its second, and claims from the view from then on; a
// process that claims once (a one-shot exec) never starts a view.
func TestPoolClaimerWatchesFromSecondClaim(t *testing.T) {
	cs := newFake()
	versioned(cs)
	keeper := New(cs, nil, Options{Pool: 4})
	defer keeper.Close(context.Background())
	claimer := New(cs, nil, Options{UsePool: true})
	defer claimer.Close(context.Background())
	cfg := testConfig(t)
	claimLists := countClaimLists(cs, cfg)
	kp := keeper.pools.get(genericPod(cfg, 1234, 1234), true)
	readyInView(t, cs, kp, 4)
	cp := claimer.pools.get(genericPod(cfg, 1234, 1234), true)
	claim := func() {
		t.Helper()
		s := &session{rt: claimer, id: sandbox.NewID(), cfg: cfg}
		got, why, err := cp.claim(context.Background(), s, noGuard)
		if err != nil || got == nil {
			t.Fatalf("claim: %v %q", err, why)
		}
	}
	claim()
	cp.mu.Lock()
	w := cp.watched
	cp.mu.Unlock()
	if w != nil {
		t.Fatal("a first claim started a watched view: a one-shot process would pay for it")
	}
	claim()
	deadline := time.Now().Add(time.Minute)
	for {
		n := 0
		for _, pod := range cp.view().idle() {
			if servable(&pod, 0, 0) == "" {
				n++
			}
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the claimer's view never showed the idle pods")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The view's own list selects the same pods: counted from here.
	before := claimLists.Load()
	claim()
	if n := claimLists.Load() - before; n != 0 {
		t.Fatalf("the third claim listed the pool %d times; want the watched view used", n)
	}
}

// versioned makes the fake cluster keep resourceVersions for pods as the
// API server does: each write gives the pod a new one, and an update at
// an older one is a conflict (the fake alone takes any update).
func versioned(cs *fakeClients) {
	var mu sync.Mutex
	next := 0
	bump := func(pod *corev1.Pod) {
		next++
		pod.ResourceVersion = strconv.Itoa(next)
	}
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		bump(a.(k8stesting.CreateAction).GetObject().(*corev1.Pod))
		return false, nil, nil
	})
	cs.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		pod := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
		cur, err := cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), pod.Namespace, pod.Name)
		if err != nil {
			return false, nil, nil // the tracker says it is gone
		}
		if cur.(*corev1.Pod).ResourceVersion != pod.ResourceVersion {
			return true, nil, apierrors.NewConflict(corev1.Resource("pods"), pod.Name, errors.New("the object has been modified"))
		}
		bump(pod)
		return false, nil, nil
	})
}

// countClaimLists counts the lists of the idle pods of cfg's pool key
// (a claim's, or a view's); registered before any pool runs (the fake's
// reactors are not safe to add while it serves).
func countClaimLists(cs *fakeClients, cfg sandbox.Config) *atomic.Int32 {
	sel := labels.SelectorFromSet(labels.Set{labelPool: poolKey(genericPod(cfg, 1234, 1234), true), labelPoolState: poolIdle}).String()
	var n atomic.Int32
	cs.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.ListAction).GetListRestrictions().Labels.String() == sel {
			n.Add(1)
		}
		return false, nil, nil
	})
	return &n
}
