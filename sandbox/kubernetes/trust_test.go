package kubernetes

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
)

// A session with a CA gets a small memory-backed directory for the bundle,
// filled by a hardened init container that alone gets the PEM and mounted
// read-only in the sandbox's container; the rest of the pod is unchanged.
// Without network: proxy it is refused.
func TestPodSpecTrustBundle(t *testing.T) {
	cfg := testConfig(t)
	cfg.Env[sandbox.TrustPEMEnv] = "from the policy" // never the policy's
	plain := podSpec(cfg, sandbox.NewID(), sandbox.OwnerLabels(), "h", 1234, 1234)
	if len(plain.Spec.Volumes) != 2 || envOf(plain.Spec.Containers[0], sandbox.TrustPEMEnv) != "" {
		t.Fatalf("a pod without a CA: volumes %v, env %v", plain.Spec.Volumes, plain.Spec.Containers[0].Env)
	}
	cfg.TrustPEM = []byte("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
	pod := podSpec(cfg, sandbox.NewID(), sandbox.OwnerLabels(), "h", 1234, 1234)
	c := pod.Spec.Containers[0]
	if envOf(c, sandbox.TrustPEMEnv) != "" {
		t.Fatalf("env %v: the session CA is the init container's only", c.Env)
	}
	if len(pod.Spec.InitContainers) != 1 {
		t.Fatalf("init containers %v: want the bundle's writer", pod.Spec.InitContainers)
	}
	ic := pod.Spec.InitContainers[0]
	isc := ic.SecurityContext
	if envOf(ic, sandbox.TrustPEMEnv) != string(cfg.TrustPEM) || len(ic.Env) != 1 || ic.Image != c.Image ||
		strings.Join(ic.Command, " ") != ExecutorPath+" executor --ca-bundle" ||
		len(ic.VolumeMounts) != 1 || ic.VolumeMounts[0].Name != trustVolume || ic.VolumeMounts[0].MountPath != "/run/agentbox" || ic.VolumeMounts[0].ReadOnly ||
		!*isc.RunAsNonRoot || *isc.RunAsUser != 1234 || *isc.AllowPrivilegeEscalation || *isc.Privileged || !*isc.ReadOnlyRootFilesystem ||
		len(isc.Capabilities.Drop) != 1 || isc.Capabilities.Drop[0] != "ALL" || isc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("init container %+v: want the executor's --ca-bundle with the PEM, hardened as the sandbox", ic)
	}
	var vol *corev1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == trustVolume {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.EmptyDir == nil || vol.EmptyDir.Medium != corev1.StorageMediumMemory || vol.EmptyDir.SizeLimit == nil || vol.EmptyDir.SizeLimit.Value() != runBytes {
		t.Fatalf("volumes %+v: want a bounded memory-backed emptyDir", pod.Spec.Volumes)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || (m.Name == trustVolume && m.MountPath == "/run/agentbox" && m.ReadOnly)
	}
	if !mounted || !*c.SecurityContext.ReadOnlyRootFilesystem || len(pod.Spec.Containers) != 1 {
		t.Fatalf("mounts %v: want /run/agentbox read-only on a read-only root, one container", c.VolumeMounts)
	}
	bad := sandbox.Config{Workspace: t.TempDir(), WorkspaceCopy: true, TrustPEM: cfg.TrustPEM}
	if err := checkConfig(&bad); err == nil || !strings.Contains(err.Error(), "network: proxy") {
		t.Fatalf("a CA without network: proxy: %v", err)
	}
}

func envOf(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// A bundle the init container cannot write ends the start with its
// message.
func TestPodStateInitFailed(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: []corev1.ContainerStatus{{Name: trustContainer,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "writing the session CA bundle: read-only"}}}}}}
	_, _, err := podState(pod, DefaultImage)
	if err == nil || !strings.Contains(err.Error(), "writing the session CA bundle") || !strings.Contains(err.Error(), trustContainer) {
		t.Fatalf("failed init container: %v", err)
	}
}
