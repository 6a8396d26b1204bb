package kubernetes

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// rewatchAfter is how long the idle view waits before listing again when
// its watch failed or ended.
const rewatchAfter = time.Second

// idleWatch is a pool's view of the idle pods of its key (every process's
// pool of that shape), kept by a list and a watch from the list's
// resourceVersion: a claim reads it instead of listing the namespace
// first, one round trip to the API server fewer. The view may be behind
// the cluster: a pod it still shows as idle was perhaps claimed since, and
// the claim's update at the seen resourceVersion then fails as a conflict
// and moves on, as it does for a listed pod. Until the first list has
// arrived (or when the view has no candidate), the claim lists as before.
type idleWatch struct {
	mu     sync.Mutex
	synced bool
	pods   map[string]*corev1.Pod
}

// watchIdle starts the view for p's key; its goroutine runs until ctx
// ends (the pool set's context: the view goes with the pools).
func (p *pool) watchIdle(ctx context.Context) *idleWatch {
	w := &idleWatch{pods: map[string]*corev1.Pod{}}
	p.set.wg.Add(1)
	go func() {
		defer p.set.wg.Done()
		for ctx.Err() == nil {
			w.follow(ctx, p)
			t := time.NewTimer(rewatchAfter)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}()
	return w
}

// follow lists the idle pods and then follows their changes until the
// watch ends or fails (the caller lists again).
func (w *idleWatch) follow(ctx context.Context, p *pool) {
	pods := p.set.rt.cs.CoreV1().Pods(p.set.rt.opts.Namespace)
	sel := labels.SelectorFromSet(labels.Set{labelPool: p.key, labelPoolState: poolIdle}).String()
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return
	}
	w.mu.Lock()
	w.pods = make(map[string]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		w.pods[list.Items[i].Name] = &list.Items[i]
	}
	w.synced = true
	w.mu.Unlock()
	wi, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return
	}
	defer wi.Stop()
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			return
		case e, open := <-wi.ResultChan():
			if !open {
				return
			}
			ev = e
		}
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return // an error or a status: list again
		}
		w.mu.Lock()
		switch {
		case ev.Type == watch.Deleted || pod.Labels[labelPoolState] != poolIdle:
			delete(w.pods, pod.Name)
		case ev.Type == watch.Added || ev.Type == watch.Modified:
			w.pods[pod.Name] = pod
		}
		w.mu.Unlock()
	}
}

// idle is the watched idle pods (copies: the claim changes them), or nil
// while the first list has not arrived.
func (w *idleWatch) idle() []corev1.Pod {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.synced {
		return nil
	}
	out := make([]corev1.Pod, 0, len(w.pods))
	for _, pod := range w.pods {
		out = append(out, *pod.DeepCopy())
	}
	return out
}
