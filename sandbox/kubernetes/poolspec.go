package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels of pool pods. A pool pod is generic: nothing in its spec belongs
// to a session (no session identity, no session deadline), so any session
// whose policy shapes the same pod (image, runtime class, user, limits,
// network isolation, the environment the policy passes) can have it.
// What a session needs beyond that (its policy's rules, its workspace)
// reaches the pod after the claim, over the executor's channel, as for a
// cold pod.
const (
	labelPool      = "agentbox.pool"       // the pool key (poolKey)
	labelPoolOwner = "agentbox.pool.owner" // the pool set (per process) that made it
	labelPoolState = "agentbox.pool.state" // poolIdle, then poolClaimed
	poolIdle       = "idle"
	poolClaimed    = "claimed"
	managedBy      = "app.kubernetes.io/managed-by"
)

// genericPod is the pod a pool keeps idle for sessions shaped like cfg:
// the cold pod's spec (every hardening default) with the pool's deadline
// and no session identity.
func genericPod(cfg sandbox.Config, uid, gid int64) *corev1.Pod {
	c := cfg
	c.SessionTimeout = 0
	pod := podSpec(c, "pool", map[string]string{}, "", uid, gid)
	pod.ObjectMeta = metav1.ObjectMeta{}
	return pod
}

// poolKey names the pods a session shaped like cfg can have: a digest of
// everything in the generic pod's spec (image, runtime class, user,
// limits, the environment the policy passes, hardening) and whether the
// pod is kept isolated.
func poolKey(pod *corev1.Pod, isolated bool) string {
	b, _ := json.Marshal(struct {
		Spec     corev1.PodSpec
		Isolated bool
	}{pod.Spec, isolated})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// specMatches checks a pod found under a pool key against the pod this
// process would have made: anyone who may create pods in the namespace
// may label one, and a session runs only in a pod hardened as its own
// would be. The API server's defaults (fields agentbox does not set) are
// not compared.
func specMatches(want, got *corev1.Pod) error {
	w, g := want.Spec, got.Spec
	switch {
	case len(g.Containers) != 1 || len(g.InitContainers) != 0 || len(g.EphemeralContainers) != 0:
		return fmt.Errorf("it has other containers")
	case g.HostNetwork || g.HostPID || g.HostIPC || g.ShareProcessNamespace != nil && *g.ShareProcessNamespace:
		return fmt.Errorf("it shares host namespaces")
	case !apiequality.Semantic.DeepEqual(w.SecurityContext, g.SecurityContext):
		return fmt.Errorf("its pod security context differs")
	case !apiequality.Semantic.DeepEqual(w.RuntimeClassName, g.RuntimeClassName):
		return fmt.Errorf("its runtime class differs")
	case !apiequality.Semantic.DeepEqual(w.Volumes, g.Volumes):
		return fmt.Errorf("its volumes differ")
	case !apiequality.Semantic.DeepEqual(w.AutomountServiceAccountToken, g.AutomountServiceAccountToken),
		!apiequality.Semantic.DeepEqual(w.EnableServiceLinks, g.EnableServiceLinks),
		w.RestartPolicy != g.RestartPolicy, w.Hostname != g.Hostname:
		return fmt.Errorf("its pod settings differ")
	}
	wc, gc := w.Containers[0], g.Containers[0]
	switch {
	case wc.Name != gc.Name || wc.Image != gc.Image || wc.WorkingDir != gc.WorkingDir ||
		!apiequality.Semantic.DeepEqual(wc.Command, gc.Command) || len(gc.Args) != 0:
		return fmt.Errorf("its container runs something else")
	case !apiequality.Semantic.DeepEqual(wc.Env, gc.Env) || len(gc.EnvFrom) != 0:
		return fmt.Errorf("its environment differs")
	case !apiequality.Semantic.DeepEqual(wc.SecurityContext, gc.SecurityContext):
		return fmt.Errorf("its container security context differs")
	case !apiequality.Semantic.DeepEqual(wc.Resources, gc.Resources):
		return fmt.Errorf("its resources differ")
	case !apiequality.Semantic.DeepEqual(wc.VolumeMounts, gc.VolumeMounts) || len(gc.VolumeDevices) != 0:
		return fmt.Errorf("its mounts differ")
	case wc.Stdin != gc.Stdin || wc.StdinOnce != gc.StdinOnce || wc.TTY != gc.TTY || len(gc.Ports) != 0 || gc.Lifecycle != nil:
		return fmt.Errorf("its container settings differ")
	}
	return nil
}

// servable says why a listed pool pod cannot be handed out ("" = it can):
// only a Ready pod whose executor runs, not being deleted, never evicted
// or restarted, with room in its deadline for the session.
func servable(p *corev1.Pod, need int64, age int64) string {
	switch {
	case p.DeletionTimestamp != nil:
		return "being deleted"
	case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
		return "ended (" + string(p.Status.Phase) + " " + p.Status.Reason + ")"
	case p.Status.Phase != corev1.PodRunning || p.Status.Reason != "":
		return "not running"
	}
	ready := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return "not Ready"
	}
	if len(p.Status.ContainerStatuses) != 1 {
		return "no container status"
	}
	cs := p.Status.ContainerStatuses[0]
	if cs.State.Running == nil || cs.RestartCount != 0 {
		return "its executor does not run"
	}
	if d := p.Spec.ActiveDeadlineSeconds; d != nil && need > 0 && *d-age < need {
		return "too close to its deadline"
	}
	return ""
}
