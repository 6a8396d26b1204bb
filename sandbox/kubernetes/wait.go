package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// imageReasons are container waiting reasons that mean the image cannot be
// had: waiting longer does not help.
var imageReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true}

// fatalReasons are waiting reasons that will not resolve by themselves.
var fatalReasons = map[string]bool{"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true, "CrashLoopBackOff": true, "PreCreateHookError": true}

// podState judges a pod on its way to Running: ready, or a reason to keep
// waiting (for the deadline's message), or an error that ends the wait.
func podState(pod *corev1.Pod, image string) (ready bool, waiting string, err error) {
	switch pod.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		why := string(pod.Status.Phase)
		if pod.Status.Reason != "" {
			why += " (" + pod.Status.Reason + ": " + pod.Status.Message + ")"
		}
		for _, cs := range pod.Status.InitContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				why += fmt.Sprintf("; the init container %s (writes the session's CA bundle) exited %d (%s) %s", cs.Name, t.ExitCode, t.Reason, strings.TrimSpace(t.Message))
			}
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil {
				why += fmt.Sprintf("; the executor exited %d (%s) %s", t.ExitCode, t.Reason, strings.TrimSpace(t.Message))
			}
		}
		return false, "", fmt.Errorf("%w: the sandbox pod ended before it could serve: %s", sandbox.ErrUnavailable, why)
	}
	for _, cs := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		if cs.State.Running != nil && pod.Status.Phase == corev1.PodRunning {
			return true, "", nil
		}
		if w := cs.State.Waiting; w != nil {
			switch {
			case imageReasons[w.Reason]:
				return false, "", fmt.Errorf("%w: image %s cannot be had on the cluster's nodes (%s: %s); build it with `agentbox image build --executor` and import it into the cluster's container runtime (a local test cluster: make k8s-up), or push it where the nodes pull from", sandbox.ErrImageMissing, image, w.Reason, w.Message)
			case fatalReasons[w.Reason] && strings.Contains(w.Message, ExecutorPath):
				return false, "", fmt.Errorf("%w: image %s has no agentbox executor at %s (%s); a devcontainer's or your own image needs it: add `COPY --from=%s %s %s` to its Dockerfile (or use agentbox image build --executor), and put the image where the nodes pull from", sandbox.ErrImageMissing, image, ExecutorPath, w.Reason, DefaultImage, ExecutorPath, ExecutorPath)
			case fatalReasons[w.Reason]:
				return false, "", fmt.Errorf("%w: the cluster cannot start the sandbox container (%s: %s)", sandbox.ErrUnavailable, w.Reason, w.Message)
			case w.Reason != "":
				waiting = w.Reason + ": " + w.Message
			}
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			waiting = "not scheduled (" + c.Reason + ": " + c.Message + ")"
		}
	}
	if waiting == "" {
		waiting = "phase " + string(pod.Status.Phase)
	}
	return false, waiting, nil
}

// waitRunning waits until the pod's container runs, within the runtime's
// start timeout. A pod the cluster cannot schedule, or whose image it
// cannot have, fails with the cluster's reason.
func (r *Runtime) waitRunning(ctx context.Context, name, image string) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.StartTimeout)
	defer cancel()
	pods := r.cs.CoreV1().Pods(r.opts.Namespace)
	last := "not created yet"
	timeout := func() error {
		if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			return fmt.Errorf("%w: the sandbox pod did not start within %s: %s (see kubectl -n %s describe pod %s; %s raises the bound)", sandbox.ErrUnavailable, r.opts.StartTimeout, last, r.opts.Namespace, name, EnvStartTimeout)
		}
		return fmt.Errorf("%w: %w", sandbox.ErrClosed, ctx.Err())
	}
	for {
		pod, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return timeout()
			}
			return fmt.Errorf("%w: reading the sandbox pod: %w", sandbox.ErrUnavailable, err)
		}
		ready, why, err := podState(pod, image)
		if ready || err != nil {
			return err
		}
		last = why
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: pod.ResourceVersion})
		if err != nil {
			if ctx.Err() != nil {
				return timeout()
			}
			return fmt.Errorf("%w: watching the sandbox pod: %w", sandbox.ErrUnavailable, err)
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				w.Stop()
				return fmt.Errorf("%w: the sandbox pod was deleted while it started", sandbox.ErrUnavailable)
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				break // a watch error: read the pod again
			}
			ready, why, err := podState(p, image)
			if ready || err != nil {
				w.Stop()
				return err
			}
			last = why
		}
		w.Stop()
		if ctx.Err() != nil {
			return timeout()
		}
	}
}
