package kubernetes

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Start creates one hardened pod running the executor (behind a
// NetworkPolicy denying all traffic for network: none), waits until it
// runs, attaches to it, completes the hello exchange and copies the
// workspace in. On any failure nothing is left behind.
func (r *Runtime) Start(ctx context.Context, cfg sandbox.Config) (sandbox.Session, error) {
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	uid, gid, err := podUser(cfg.User)
	if err != nil {
		return nil, err
	}
	if r.rest == nil {
		return nil, fmt.Errorf("%w: no REST configuration to attach with (internal: use kubernetes.Connect)", sandbox.ErrUnavailable)
	}
	if cfg.Runtime, err = r.runtimeClass(ctx, cfg.Runtime); err != nil {
		return nil, err
	}
	id := cfg.SessionID
	if id == "" {
		id = sandbox.NewID()
	}
	cfg.SessionID = id
	s := &session{rt: r, id: id, name: podName(id), cfg: cfg,
		info: sandbox.Info{SessionID: id, Image: cfg.Image, Runtime: cfg.Runtime, User: fmt.Sprintf("%d:%d", uid, gid)}}
	r.track(s)
	ok := false
	defer func() {
		if !ok {
			_ = s.destroy(context.WithoutCancel(ctx))
		}
	}()
	guarded := func() error { return nil }
	if isolated(cfg.Network) {
		// Before the pod is the session's: it never runs unguarded. The
		// policy is made while the pool is listed; the claim (or a cold
		// pod's create) waits for it.
		s.netpol = true
		done := make(chan error, 1)
		go func() {
			_, err := r.cs.NetworkingV1().NetworkPolicies(r.opts.Namespace).Create(ctx, denyAllPolicy(id, cfg, r.owner, r.host), metav1.CreateOptions{})
			done <- err
		}()
		var once error
		waited := false
		guarded = func() error {
			if !waited {
				waited, once = true, <-done
				if once != nil {
					once = r.createError("the NetworkPolicy", once)
				}
			}
			return once
		}
		defer func() { _ = guarded() }() // no goroutine outlives Start
	}
	pod, warm, err := r.newPod(ctx, s, uid, gid, guarded)
	if err != nil {
		return nil, err
	}
	for {
		s.info.ContainerID = string(pod.UID)
		if s.closed.Load() {
			// CloseAll ran while the pod was being created: it found none.
			return nil, fmt.Errorf("%w: the runtime was shut down while the sandbox started", sandbox.ErrClosed)
		}
		if !warm {
			if err := r.waitRunning(ctx, s.name, cfg.Image); err != nil {
				return nil, err
			}
			if p, err := r.cs.CoreV1().Pods(r.opts.Namespace).Get(ctx, s.name, metav1.GetOptions{}); err == nil {
				pod = p
			}
		}
		for _, st := range pod.Status.ContainerStatuses {
			s.info.ImageID = st.ImageID
		}
		// With the image's content id known, its manifest of executables
		// is cached on the host as Docker's is: the next pod of the image
		// (a warm one above all) gets it in the hello instead of walking
		// and listing the image at the start of every session.
		s.cfg.Enforce.Image = manifestKey(s.info.ImageID)
		err := s.connect(ctx)
		if err == nil {
			break
		}
		if !warm {
			return nil, err
		}
		if pod, err = r.coldAfterWarm(ctx, s, uid, gid, err); err != nil {
			return nil, err
		}
		warm = false
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("%w: the runtime was shut down while the sandbox started", sandbox.ErrClosed)
	}
	ok = true
	return s, nil
}

// createError says why the cluster refused an object, and what to do.
func (r *Runtime) createError(what string, err error) error {
	msg := err.Error()
	switch {
	case apierrors.IsNotFound(err) && strings.Contains(msg, "namespace"):
		return fmt.Errorf("%w: creating %s: namespace %q does not exist; create it (kubectl create namespace %s) or choose another namespace", sandbox.ErrUnavailable, what, r.opts.Namespace, r.opts.Namespace)
	case strings.Contains(msg, "RuntimeClass"):
		return fmt.Errorf("%w: creating %s: %v; install that RuntimeClass on the cluster, or set sandbox.runtime: \"\"", sandbox.ErrUnavailable, what, err)
	case apierrors.IsForbidden(err) && strings.Contains(msg, "exceeded quota"):
		return fmt.Errorf("%w: creating %s: the namespace's ResourceQuota has no room for another sandbox (%v); wait for sessions to end, or raise the quota of namespace %s", sandbox.ErrUnavailable, what, err, r.opts.Namespace)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w: creating %s: the cluster refused it (%v); agentbox needs to create pods, pods/attach and networkpolicies in namespace %s", sandbox.ErrUnavailable, what, err, r.opts.Namespace)
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%w: creating %s: a sandbox of this session exists already on the cluster (a session id is used once)", sandbox.ErrConfig, what)
	}
	return fmt.Errorf("%w: creating %s: %w", sandbox.ErrUnavailable, what, err)
}

// manifestKey is the content id a pod's image is known by in the
// manifest cache ("sha256:<hex>"), from the container status's image id:
// the image's own id, or a digest reference (repo@sha256:<hex>) whose
// digest names the content as well. "" (no cache: the manifest is made
// at hello) for anything else.
func manifestKey(imageID string) string {
	i := strings.LastIndex(imageID, "sha256:")
	if i < 0 || (i > 0 && imageID[i-1] != '@') {
		return ""
	}
	hex := imageID[i+len("sha256:"):]
	if len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return ""
	}
	return "sha256:" + hex
}
