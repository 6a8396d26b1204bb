package kubernetes

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// containerName is the sandbox's only container.
const containerName = "sandbox"

// tmpBytes bounds /tmp (memory-backed, as the tmpfs on Docker).
const tmpBytes = 64 << 20

// deadlineMargin is how long past the session timeout the cluster lets a
// pod run before it kills it on its own (activeDeadlineSeconds): a safety
// net under agentbox's own timeout, its Close and gc.
const deadlineMargin = 10 * time.Minute

// defaultDeadline is the safety net when the session says no timeout.
const defaultDeadline = sandbox.GCAgeBound

// podName is the pod (and NetworkPolicy) name of a session.
func podName(id string) string { return "agentbox-" + id }

// meta is the identity every object of a session carries: the session as
// a label (selectable), the owner as annotations (label values cannot hold
// "pid:start").
func meta(id string, cfg sandbox.Config, owner map[string]string, host string) metav1.ObjectMeta {
	ann := maps.Clone(owner)
	ann[sandbox.LabelHost] = host
	ann[sandbox.LabelTimeout] = strconv.FormatInt(int64(cfg.SessionTimeout.Seconds()), 10)
	return metav1.ObjectMeta{
		Name:        podName(id),
		Labels:      map[string]string{sandbox.LabelSession: id, "app.kubernetes.io/managed-by": "agentbox"},
		Annotations: ann,
	}
}

// podSpec is every hardening default of docs/DESIGN.md as a pod: non-root, no
// privilege escalation, no capabilities, read-only root, RuntimeDefault
// seccomp, no service-account token, no host namespaces or paths, limits
// from the policy, the workspace and /tmp as bounded emptyDirs.
func podSpec(cfg sandbox.Config, id string, owner map[string]string, host string, uid, gid int64) *corev1.Pod {
	yes, no := true, false
	deadline := int64((cfg.SessionTimeout + deadlineMargin).Seconds())
	if cfg.SessionTimeout <= 0 {
		deadline = int64(defaultDeadline.Seconds())
	}
	grace := int64(1)
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	cpu := resource.NewMilliQuantity(int64(cfg.CPUs*1000), resource.DecimalSI)
	mem := resource.NewQuantity(cfg.MemoryBytes, resource.BinarySI)
	disk := resource.NewQuantity(cfg.DiskBytes, resource.BinarySI)
	tmp := resource.NewQuantity(tmpBytes, resource.BinarySI)
	limits := corev1.ResourceList{corev1.ResourceCPU: *cpu, corev1.ResourceMemory: *mem}
	env := []corev1.EnvVar{
		{Name: "PATH", Value: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		{Name: "HOME", Value: "/tmp"},
	}
	vars := maps.Clone(cfg.Env)
	if cfg.Network == sandbox.NetworkProxy {
		if vars == nil {
			vars = map[string]string{}
		}
		maps.Copy(vars, sandbox.ProxyEnv()) // the proxy's variables win
	}
	delete(vars, sandbox.TrustPEMEnv) // the init container's only
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, corev1.EnvVar{Name: k, Value: vars[k]})
	}
	pod := &corev1.Pod{
		ObjectMeta: meta(id, cfg, owner, host),
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			Hostname:                      "agentbox",
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   &yes,
				RunAsUser:      &uid,
				RunAsGroup:     &gid,
				SeccompProfile: seccomp,
			},
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           cfg.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{ExecutorPath, "executor"},
				WorkingDir:      sandbox.WorkspaceDir,
				Env:             env,
				Stdin:           true,
				StdinOnce:       true,
				TTY:             false,
				Resources:       corev1.ResourceRequirements{Requests: limits, Limits: limits},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot:             &yes,
					RunAsUser:                &uid,
					RunAsGroup:               &gid,
					AllowPrivilegeEscalation: &no,
					Privileged:               &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           seccomp,
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "workspace", MountPath: sandbox.WorkspaceDir},
					{Name: "tmp", MountPath: "/tmp"},
				},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
			Volumes: []corev1.Volume{
				{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: disk}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: tmp}}},
			},
		},
	}
	withTrustBundle(pod, cfg.TrustPEM)
	if cfg.Runtime != "" {
		rc := cfg.Runtime
		pod.Spec.RuntimeClassName = &rc
	}
	return pod
}

// denyAllPolicy selects the session's pod and allows no traffic at all,
// in or out (network: none).
func denyAllPolicy(id string, cfg sandbox.Config, owner map[string]string, host string) *netv1.NetworkPolicy {
	return &netv1.NetworkPolicy{
		ObjectMeta: meta(id, cfg, owner, host),
		Spec: netv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{sandbox.LabelSession: id}},
			PolicyTypes: []netv1.PolicyType{netv1.PolicyTypeIngress, netv1.PolicyTypeEgress},
		},
	}
}
