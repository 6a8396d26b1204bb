package kubernetes

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Start notes: the first words of the line Options.Notice receives.
const (
	StartWarm = "warm pod from pool"
	StartCold = "cold start: pool empty"
)

// claimTries bounds how many pods one claim tries (races lost, pods that
// fail after the claim) before it starts a cold pod.
const claimTries = 8

// claim hands the session an idle pod of its pool, if there is one: every
// pool's pod of the key, whoever keeps it, is a candidate once its spec
// proves it hardened as the session's own pod would be. The claim is one
// update of the pod at the resourceVersion it was listed at (its labels
// say claimed and whose session, the owner annotations and owner
// reference become this process's, its deadline the session's): if anyone
// changed the pod since (another process claimed it, the cluster evicted
// or is deleting it), the update fails and the next pod is tried. Nil, no
// error: start a cold pod (why says why). guarded is waited for before the
// first update: the session's own NetworkPolicy exists before any pod
// becomes the session's.
func (p *pool) claim(ctx context.Context, s *session, guarded func() error) (pod *corev1.Pod, why string, err error) {
	pods := p.set.rt.cs.CoreV1().Pods(p.set.rt.opts.Namespace)
	defer p.wake()
	need := int64(0)
	if s.cfg.SessionTimeout > 0 {
		need = int64((s.cfg.SessionTimeout + deadlineMargin).Seconds())
	}
	if pod, err = p.claimFrom(ctx, s, p.view().idle(), need, guarded); pod != nil || err != nil {
		return pod, "", err
	}
	sel := labels.SelectorFromSet(labels.Set{labelPool: p.key, labelPoolState: poolIdle}).String()
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, "", fmt.Errorf("%w: listing the warm pool's pods: %w", sandbox.ErrUnavailable, err)
	}
	if pod, err = p.claimFrom(ctx, s, list.Items, need, guarded); pod != nil || err != nil {
		return pod, "", err
	}
	why = "pool empty"
	if r := p.refusal(); r != "" {
		why += " (" + r + ")"
	}
	return nil, why, nil
}

// view is the pool's watched view of the idle pods, nil while it has
// none. A process that keeps no pool of its own but claims from others'
// (batch, a long run with --pool 0) starts one at its second claim of
// the key: every later claim skips the list. A one-shot process, which
// claims once, starts none (it would only add load to the API server).
func (p *pool) view() *idleWatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.claims++; p.claims == 2 && p.watched == nil {
		// Under the set's lock, which close stops it under: the view's
		// goroutine is counted before close waits, or never starts.
		p.set.mu.Lock()
		if p.set.ctx.Err() == nil {
			p.watched = p.watchIdle(p.set.ctx)
		}
		p.set.mu.Unlock()
	}
	return p.watched
}

// claimFrom tries to claim one of cands (shuffled: two processes rarely
// race for the same pod); nil, nil when none could be claimed.
func (p *pool) claimFrom(ctx context.Context, s *session, cands []corev1.Pod, need int64, guarded func() error) (*corev1.Pod, error) {
	pods := p.set.rt.cs.CoreV1().Pods(p.set.rt.opts.Namespace)
	now := time.Now()
	rand.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	tries := 0
	for i := range cands {
		c := &cands[i]
		age := podAge(c, now)
		if servable(c, need, age) != "" {
			continue // its owner's refill replaces it
		}
		if err := specMatches(p.pod, c); err != nil {
			continue // not a pod agentbox made for this shape
		}
		if tries++; tries > claimTries {
			break
		}
		if err := guarded(); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", sandbox.ErrClosed, context.Cause(ctx))
		}
		wctx, cancel := settled(ctx) // a claim that landed is the session's: its pod is known
		got, err := pods.Update(wctx, claimed(c, s, p.set, need, age), metav1.UpdateOptions{})
		cancel()
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // another process got it, or it is gone
		}
		if err != nil {
			return nil, fmt.Errorf("%w: claiming a warm pool pod: %w", sandbox.ErrUnavailable, err)
		}
		return got, nil
	}
	return nil, nil
}

// claimed is the listed pod as the session's: the update that claims it.
func claimed(c *corev1.Pod, s *session, ps *pools, need, age int64) *corev1.Pod {
	pod := c.DeepCopy()
	pod.Labels[labelPoolState] = poolClaimed
	pod.Labels[sandbox.LabelSession] = s.id
	ann := maps.Clone(s.rt.owner)
	ann[sandbox.LabelHost] = s.rt.host
	ann[sandbox.LabelTimeout] = strconv.FormatInt(int64(s.cfg.SessionTimeout.Seconds()), 10)
	pod.Annotations = ann
	ps.mu.Lock()
	pod.OwnerReferences = nil // the pool's owner may go: the session's pod stays
	if ps.ownerRef != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*ps.ownerRef}
	}
	ps.mu.Unlock()
	if need > 0 {
		// The cluster stops the pod past the session's timeout (the
		// deadline counts from the pod's start and may only shrink).
		if d := age + need; pod.Spec.ActiveDeadlineSeconds == nil || d < *pod.Spec.ActiveDeadlineSeconds {
			pod.Spec.ActiveDeadlineSeconds = &d
		}
	}
	return pod
}

// podAge is how long the pod has run, in whole seconds rounded up.
func podAge(p *corev1.Pod, now time.Time) int64 {
	if p.Status.StartTime == nil {
		return 0
	}
	return int64(now.Sub(p.Status.StartTime.Time).Seconds()) + 1
}
