package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GC removes the sandbox pods of this namespace whose owner is proven dead
// (the rules of sandbox.GCReason, on the owner annotations), and the
// NetworkPolicies of sessions whose pod is gone and whose owner is too.
// A pod whose owner lives, or cannot be proven dead, is never touched;
// nor, unless o.AllOwners, one whose owner was another user (counted).
func (r *Runtime) GC(ctx context.Context, o sandbox.GCOptions) (sandbox.GCResult, error) {
	sel := metav1.ListOptions{LabelSelector: sandbox.LabelSession}
	o.Step("listing the namespace's sandbox pods")
	pods, err := r.cs.CoreV1().Pods(r.opts.Namespace).List(ctx, sel)
	if err != nil {
		return sandbox.GCResult{}, fmt.Errorf("%w: listing sandbox pods: %w", sandbox.ErrUnavailable, err)
	}
	now := time.Now()
	var removed []sandbox.Removed
	var errs []error
	others := 0
	podOf := map[string]bool{}
	for _, p := range pods.Items {
		podOf[p.Labels[sandbox.LabelSession]] = true
		stopped := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		reason := sandbox.GCReason(p.Annotations, stopped, p.CreationTimestamp.Time, now)
		if reason == "" {
			continue
		}
		if !o.Covers(p.Annotations) {
			others++
			continue
		}
		o.Step("deleting sandbox pods whose owner is gone")
		err := r.cs.CoreV1().Pods(r.opts.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		// Its NetworkPolicy goes with it, once the pod is gone (a pod
		// claimed from a pool is named apart from its session's policy).
		for _, name := range slices.Compact([]string{p.Name, podName(p.Labels[sandbox.LabelSession])}) {
			if nerr := r.cs.NetworkingV1().NetworkPolicies(r.opts.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); nerr != nil && !apierrors.IsNotFound(nerr) {
				errs = append(errs, nerr)
			}
		}
		removed = append(removed, sandbox.Removed{ID: p.Name, Reason: reason})
	}
	pols, err := r.cs.NetworkingV1().NetworkPolicies(r.opts.Namespace).List(ctx, sel)
	if err != nil {
		return sandbox.GCResult{Removed: removed, Others: others}, errors.Join(append(errs, fmt.Errorf("%w: listing sandbox NetworkPolicies: %w", sandbox.ErrUnavailable, err))...)
	}
	for _, np := range pols.Items {
		if podOf[np.Labels[sandbox.LabelSession]] {
			continue // its pod decides
		}
		// A policy without a pod: one whose start failed or is under way.
		// Under way means its owner lives.
		reason := sandbox.GCReason(np.Annotations, true, np.CreationTimestamp.Time, now)
		if reason == "" || !o.Covers(np.Annotations) {
			continue // another user's is counted with its pod
		}
		if err := r.cs.NetworkingV1().NetworkPolicies(r.opts.Namespace).Delete(ctx, np.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, sandbox.Removed{ID: np.Name + " (NetworkPolicy)", Reason: reason})
	}
	removed, errs = r.gcPools(ctx, o, now, removed, errs)
	return sandbox.GCResult{Removed: removed, Others: others}, errors.Join(errs...)
}

// ListSandboxes returns the names of the sandbox pods in the namespace, all
// of them or those of one session.
func (r *Runtime) ListSandboxes(ctx context.Context, session string) ([]string, error) {
	sel := sandbox.LabelSession
	if session != "" {
		sel += "=" + session
	}
	pods, err := r.cs.CoreV1().Pods(r.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("%w: listing sandbox pods: %w", sandbox.ErrUnavailable, err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	return names, nil
}
