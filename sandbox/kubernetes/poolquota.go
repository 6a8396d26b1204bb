package kubernetes

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errBudget: the namespace's ResourceQuota (its budget) has no room for
// another idle pod beside one session's; the pool waits, sessions start
// cold in the room it left.
var errBudget = errors.New("no room for another idle pod")

// budgetRoom is how many more idle pods of the pool's shape the
// namespace's ResourceQuotas allow while each still leaves room for one
// session pod of that shape (a session whose pool is empty can then always
// start cold): the least, over every quota that applies to the pool's
// pods and every resource it bounds that such a pod uses, of what is left
// divided by what one pod takes, less one. -1: no quota bounds the pool
// (or the quotas cannot be read: the API server's refusal then says it).
// why names the quota that bounds it, for the cold start's line.
func (p *pool) budgetRoom(ctx context.Context) (room int, why string) {
	list, err := p.set.rt.cs.CoreV1().ResourceQuotas(p.set.rt.opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return -1, ""
	}
	use := podUse(p.pod)
	room = -1
	for _, q := range list.Items {
		if !quotaApplies(&q) {
			continue
		}
		for name, hard := range q.Status.Hard {
			per, ok := use[name]
			if !ok || per.IsZero() {
				continue
			}
			used := q.Status.Used[name]
			left := hard.DeepCopy()
			left.Sub(used)
			fit := 0
			if left.Sign() > 0 {
				fit = int(left.MilliValue() / per.MilliValue())
			}
			if n := max(fit-1, 0); room < 0 || n < room {
				room = n
				why = fmt.Sprintf("the namespace's ResourceQuota %s has %s %s of %s used, and the pool leaves room for a session pod", q.Name, name, used.String(), hard.String())
			}
		}
	}
	return room, why
}

// quotaApplies: a quota counts the pool's pods unless its scopes leave
// them out (pool pods have a deadline, so Terminating; requests, so
// NotBestEffort; no priority class). A quota with a scope selector is not
// evaluated here: the API server still enforces it at creation.
func quotaApplies(q *corev1.ResourceQuota) bool {
	if q.Spec.ScopeSelector != nil && len(q.Spec.ScopeSelector.MatchExpressions) > 0 {
		return false
	}
	for _, s := range q.Spec.Scopes {
		if s != corev1.ResourceQuotaScopeTerminating && s != corev1.ResourceQuotaScopeNotBestEffort {
			return false
		}
	}
	return true
}

// podUse is what one pod of the shape counts against a quota, by the
// quota's resource names.
func podUse(pod *corev1.Pod) map[corev1.ResourceName]resource.Quantity {
	one := resource.MustParse("1")
	use := map[corev1.ResourceName]resource.Quantity{corev1.ResourcePods: one, "count/pods": one}
	add := func(name corev1.ResourceName, q resource.Quantity) {
		sum := use[name]
		sum.Add(q)
		use[name] = sum
	}
	for _, c := range pod.Spec.Containers {
		for r, q := range c.Resources.Requests {
			add(corev1.ResourceName("requests."+string(r)), q)
			if r == corev1.ResourceCPU || r == corev1.ResourceMemory || r == corev1.ResourceEphemeralStorage {
				add(r, q) // "cpu" in a quota means requests.cpu
			}
		}
		for r, q := range c.Resources.Limits {
			add(corev1.ResourceName("limits."+string(r)), q)
		}
	}
	return use
}
