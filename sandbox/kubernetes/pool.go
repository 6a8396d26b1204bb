package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// refillEvery is how often a pool checks its pods when nothing happened
// (a claim or a refused create wakes it sooner or later).
const refillEvery = 2 * time.Second

// refusedBackoff is how long a pool waits after the cluster refused its
// pods (quota, admission) before it tries again; sessions start cold.
const refusedBackoff = 30 * time.Second

// pools are a runtime's warm pools (Options.Pool): one per pool key, each
// with a goroutine that keeps Pool idle pods. Every pool object belongs to
// one ConfigMap per process (the pool set's owner), by owner reference:
// the cluster's garbage collector removes them once the ConfigMap is gone,
// and `agentbox gc` removes the ConfigMap once its owner process is.
type pools struct {
	rt   *Runtime
	id   string // this process's pool set: labelPoolOwner, the ConfigMap's name
	size int

	mu       sync.Mutex
	byKey    map[string]*pool
	ownerRef *metav1.OwnerReference // the ConfigMap, once made
	netpol   bool                   // the pool set's deny-all NetworkPolicy exists
	ctx      context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// pool keeps size idle pods of one shape.
type pool struct {
	set      *pools
	key      string
	pod      *corev1.Pod // the generic pod
	isolated bool
	kick     chan struct{}

	mu      sync.Mutex
	refused string     // the cluster's last refusal of a pool pod ("" = none)
	watched *idleWatch // the idle pods of the key (nil: a claim lists them)
	claims  int        // claims made so far (a claiming process watches from its second)
}

func newPools(rt *Runtime, size int) *pools {
	ctx, stop := context.WithCancel(context.Background())
	return &pools{rt: rt, id: "pool-" + sandbox.NewID()[:16], size: size, byKey: map[string]*pool{}, ctx: ctx, stop: stop}
}

// get returns the pool for a generic pod, starting it (and its refill
// goroutine) on first use.
func (ps *pools) get(pod *corev1.Pod, isolated bool) *pool {
	key := poolKey(pod, isolated)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.byKey[key]; p != nil || ps.ctx.Err() != nil {
		return p
	}
	p := &pool{set: ps, key: key, pod: pod, isolated: isolated, kick: make(chan struct{}, 1)}
	ps.byKey[key] = p
	if ps.size > 0 {
		p.watched = p.watchIdle(ps.ctx)
		p.claims = 1 // a keeper watches from the start
		ps.wg.Add(1)
		go func() {
			defer ps.wg.Done()
			p.refill(ps.ctx)
		}()
	}
	return p
}

// refill keeps the pool's idle pods at size until ctx ends.
func (p *pool) refill(ctx context.Context) {
	for {
		wait := refillEvery
		if err := p.fill(ctx); err != nil && ctx.Err() == nil {
			p.setRefused(oneLine(err.Error()))
			if !errors.Is(err, errBudget) {
				wait = refusedBackoff // the cluster refused: do not insist
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-p.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// wake asks the refill goroutine to look now (a pod was claimed).
func (p *pool) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// refusal is why the cluster refused the pool's pods ("" = it did not).
func (p *pool) refusal() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// selector matches this process's idle pods of this pool.
func (p *pool) ownIdle() string {
	return labels.SelectorFromSet(labels.Set{labelPool: p.key, labelPoolOwner: p.set.id, labelPoolState: poolIdle}).String()
}

// fill deletes this process's pool pods that can no longer serve (ended,
// evicted) and creates pods until size are idle or on their way.
func (p *pool) fill(ctx context.Context) error {
	pods := p.set.rt.cs.CoreV1().Pods(p.set.rt.opts.Namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: p.ownIdle()})
	if err != nil {
		return fmt.Errorf("listing the pool's pods: %w", err)
	}
	have := 0
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.DeletionTimestamp != nil {
			continue
		}
		if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Reason != "" {
			p.set.deleteIdle(ctx, pod) // replaced below
			continue
		}
		have++
	}
	if have >= p.set.size {
		p.setRefused("")
		return nil
	}
	want := p.set.size - have
	room, why := p.budgetRoom(ctx)
	if room >= 0 && room < want {
		want = room
	}
	if want > 0 {
		if err := p.set.ensureOwner(ctx, p.isolated); err != nil {
			return err
		}
	}
	for range want {
		if _, err := pods.Create(ctx, p.newPod(), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("the cluster refused a pool pod: %w", err)
		}
	}
	if have+want < p.set.size {
		return fmt.Errorf("%w: %s", errBudget, why)
	}
	p.setRefused("")
	return nil
}

// setRefused records why the pool cannot keep its size ("" = it can).
func (p *pool) setRefused(why string) {
	p.mu.Lock()
	p.refused = why
	p.mu.Unlock()
}

// newPod is one idle pod of the pool: the generic pod, its own id as its
// session label (gc finds it as it finds any sandbox pod), the owner's
// identity, and the pool set's ConfigMap as its owner.
func (p *pool) newPod() *corev1.Pod {
	id := sandbox.NewID()
	pod := p.pod.DeepCopy()
	ann := maps.Clone(p.set.rt.owner)
	ann[sandbox.LabelHost] = p.set.rt.host
	ann[sandbox.LabelTimeout] = "0"
	pod.ObjectMeta = metav1.ObjectMeta{
		Name: podName(id),
		Labels: map[string]string{sandbox.LabelSession: id, managedBy: "agentbox",
			labelPool: p.key, labelPoolOwner: p.set.id, labelPoolState: poolIdle},
		Annotations: ann,
	}
	p.set.mu.Lock()
	if p.set.ownerRef != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*p.set.ownerRef}
	}
	p.set.mu.Unlock()
	return pod
}

// ensureOwner makes the pool set's ConfigMap (the owner of every pool
// object), and its deny-all NetworkPolicy when a pool is isolated, once.
func (ps *pools) ensureOwner(ctx context.Context, isolated bool) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ns := ps.rt.opts.Namespace
	ann := maps.Clone(ps.rt.owner)
	ann[sandbox.LabelHost] = ps.rt.host
	ann[sandbox.LabelTimeout] = "0"
	if ps.ownerRef == nil {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "agentbox-" + ps.id, Annotations: ann,
			Labels: map[string]string{managedBy: "agentbox", labelPoolOwner: ps.id}},
			Data: map[string]string{"about": "owner of the warm pool pods of one agentbox process; agentbox gc removes it once that process is gone"}}
		made, err := ps.rt.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("the cluster refused the pool's ConfigMap: %w", err)
		}
		ps.ownerRef = &metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: made.Name, UID: made.UID}
	}
	if isolated && !ps.netpol {
		// Idle pods are isolated before they exist; a claimed pod is also
		// covered by its session's own policy (made before the claim).
		np := &netv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "agentbox-" + ps.id, Annotations: ann,
				Labels:          map[string]string{managedBy: "agentbox", labelPoolOwner: ps.id, sandbox.LabelSession: ps.id},
				OwnerReferences: []metav1.OwnerReference{*ps.ownerRef}},
			Spec: netv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{labelPoolOwner: ps.id}},
				PolicyTypes: []netv1.PolicyType{netv1.PolicyTypeIngress, netv1.PolicyTypeEgress},
			},
		}
		if _, err := ps.rt.cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("the cluster refused the pool's NetworkPolicy: %w", err)
		}
		ps.netpol = true
	}
	return nil
}

// deleteIdle deletes a pool pod only if it is still as listed: a pod
// another process claimed since is left alone.
func (ps *pools) deleteIdle(ctx context.Context, pod *corev1.Pod) {
	rv := pod.ResourceVersion
	_ = ps.rt.cs.CoreV1().Pods(ps.rt.opts.Namespace).Delete(ctx, pod.Name,
		metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
}

// close stops the refills and removes this process's idle pods, its
// NetworkPolicy and ConfigMap (pods claimed by sessions are theirs).
func (ps *pools) close(ctx context.Context) error {
	ps.mu.Lock()
	ps.stop() // under the lock: no goroutine starts after (get, view)
	ps.mu.Unlock()
	ps.wg.Wait()
	ps.mu.Lock()
	owner := ps.ownerRef
	ps.mu.Unlock()
	if owner == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	ns := ps.rt.opts.Namespace
	sel := labels.SelectorFromSet(labels.Set{labelPoolOwner: ps.id, labelPoolState: poolIdle}).String()
	var errs []error
	list, err := ps.rt.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		errs = append(errs, err)
	} else {
		for i := range list.Items {
			ps.deleteIdle(ctx, &list.Items[i])
		}
	}
	if ps.netpol {
		if err := ps.rt.cs.NetworkingV1().NetworkPolicies(ns).Delete(ctx, "agentbox-"+ps.id, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	bg := metav1.DeletePropagationBackground
	if err := ps.rt.cs.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: removing the warm pool: %w; agentbox gc on this cluster removes what is left", sandbox.ErrUnavailable, err)
	}
	return nil
}

// oneLine is the first line of a message, bounded.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
