package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// newPod gives the session its pod: a warm one claimed from its pool
// (Options.UsePool), else a cold one created for it. Warm pods run
// already. guarded returns once the session's own NetworkPolicy exists
// (or why it does not): nothing becomes the session's before.
func (r *Runtime) newPod(ctx context.Context, s *session, uid, gid int64, guarded func() error) (pod *corev1.Pod, warm bool, err error) {
	if r.pools != nil {
		why := ""
		if len(s.cfg.TrustPEM) > 0 {
			// The session's CA is part of its pod: not a generic one.
			why = "the session's CA is mounted into its own pod, not a pool's"
		} else {
			t0 := time.Now()
			p := r.pools.get(genericPod(s.cfg, uid, gid), isolated(s.cfg.Network))
			if p != nil {
				pod, why, err = p.claim(ctx, s, guarded)
				if err != nil {
					return nil, false, err
				}
				if pod != nil {
					s.name, s.info.Start = pod.Name, sandbox.StartWarm
					r.notice(fmt.Sprintf("kubernetes: %s (%s, claimed in %d ms)", StartWarm, pod.Name, time.Since(t0).Milliseconds()))
					return pod, true, nil
				}
			}
		}
		if why == "" {
			why = "the runtime is closing"
		}
		r.notice("kubernetes: cold start: " + why)
		s.info.Start = sandbox.StartCold
	}
	if err := guarded(); err != nil {
		return nil, false, err
	}
	pod, err = r.createPod(ctx, s, uid, gid)
	return pod, false, err
}

// createPod creates the session's own (cold) pod, named for the session,
// the write settled: an interrupted start knows whether it landed.
func (r *Runtime) createPod(ctx context.Context, s *session, uid, gid int64) (*corev1.Pod, error) {
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrClosed, context.Cause(ctx))
	}
	wctx, cancel := settled(ctx)
	defer cancel()
	pod, err := r.cs.CoreV1().Pods(r.opts.Namespace).Create(wctx, podSpec(s.cfg, s.id, r.owner, r.host, uid, gid), metav1.CreateOptions{})
	if err != nil {
		return nil, r.createError("the sandbox pod", err)
	}
	return pod, nil
}

// writeTimeout bounds a write whose outcome must be known (settled).
const writeTimeout = 30 * time.Second

// settled is the context of a write that makes something of the
// session's (a pod created, a pod claimed): not ended with ctx, so that
// an interrupted start knows whether the write landed and removes what it
// made by name (the API server completes a write whose client hung up;
// one landing after the start's clean-up would outlive the session).
func settled(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
}

// coldAfterWarm gives up a claimed pod that did not serve (it died or was
// deleted after the claim) and starts the session cold instead: a pool
// pod's failure never fails a session.
func (r *Runtime) coldAfterWarm(ctx context.Context, s *session, uid, gid int64, cause error) (*corev1.Pod, error) {
	if !errors.Is(cause, sandbox.ErrUnavailable) && !errors.Is(cause, sandbox.ErrExecutor) {
		return nil, cause
	}
	_ = s.kill(context.WithoutCancel(ctx))
	s.resetChannel()
	r.notice(fmt.Sprintf("kubernetes: cold start: the claimed pool pod %s failed (%s)", s.name, oneLine(cause.Error())))
	s.name, s.info.Start = podName(s.id), sandbox.StartCold
	return r.createPod(ctx, s, uid, gid)
}

// resetChannel ends the attach stream and client of a pod given up.
func (s *session) resetChannel() {
	if s.Client != nil {
		_ = s.Client.Close()
	}
	if s.egress != nil {
		s.egress.Wait()
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	s.Client, s.egress, s.cancel, s.stream = nil, nil, nil, nil
}

// notice passes a line about how a session started to Options.Notice.
func (r *Runtime) notice(line string) {
	if r.opts.Notice != nil {
		r.opts.Notice(line)
	}
}

// Warm starts the warm pool for sessions shaped like cfg now, before the
// first of them asks; a no-op without Options.Pool. The CLI does not call
// it (a session's first Start fills its pool: run and exec start one at
// once); make bench's pool measurement does, to begin from a full pool.
func (r *Runtime) Warm(ctx context.Context, cfg sandbox.Config) {
	if r.pools == nil || r.pools.size == 0 || len(cfg.TrustPEM) > 0 {
		return
	}
	if err := checkConfig(&cfg); err != nil {
		return // Start reports it
	}
	uid, gid, err := podUser(cfg.User)
	if err != nil {
		return
	}
	if cfg.Runtime, err = r.runtimeClass(ctx, cfg.Runtime); err != nil {
		return
	}
	r.pools.get(genericPod(cfg, uid, gid), isolated(cfg.Network))
}

// PoolIdle counts the idle pods this process's pool for sessions shaped
// like cfg has Ready to hand out (benchmarks and tests wait on it).
func (r *Runtime) PoolIdle(ctx context.Context, cfg sandbox.Config) (int, error) {
	if r.pools == nil {
		return 0, nil
	}
	if err := checkConfig(&cfg); err != nil {
		return 0, err
	}
	uid, gid, err := podUser(cfg.User)
	if err != nil {
		return 0, err
	}
	if cfg.Runtime, err = r.runtimeClass(ctx, cfg.Runtime); err != nil {
		return 0, err
	}
	p := r.pools.get(genericPod(cfg, uid, gid), isolated(cfg.Network))
	if p == nil {
		return 0, nil
	}
	return r.servableIdle(ctx, p.ownIdle())
}

// IdlePods counts the idle pool pods Ready to hand out in the namespace,
// of any shape and any process's pool (benchmarks wait on another
// process's pool with it).
func (r *Runtime) IdlePods(ctx context.Context) (int, error) {
	return r.servableIdle(ctx, labels.SelectorFromSet(labels.Set{labelPoolState: poolIdle}).String())
}

// servableIdle counts the pods sel selects that could be handed out now.
func (r *Runtime) servableIdle(ctx context.Context, sel string) (int, error) {
	list, err := r.cs.CoreV1().Pods(r.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return 0, fmt.Errorf("%w: listing the pool's pods: %w", sandbox.ErrUnavailable, err)
	}
	n := 0
	for i := range list.Items {
		if servable(&list.Items[i], 0, 0) == "" {
			n++
		}
	}
	return n, nil
}
