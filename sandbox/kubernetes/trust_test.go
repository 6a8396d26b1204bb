package kubernetes

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
)

// A session with a CA gets the PEM for its executor and a small
// memory-backed directory for the bundle; the rest of the pod (read-only
// root, one container) is unchanged. Without network: proxy it is refused.
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
	if envOf(c, sandbox.TrustPEMEnv) != string(cfg.TrustPEM) {
		t.Fatalf("env %v: want the session CA for the executor", c.Env)
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
		mounted = mounted || (m.Name == trustVolume && m.MountPath == "/run/agentbox")
	}
	if !mounted || !*c.SecurityContext.ReadOnlyRootFilesystem || len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) != 0 {
		t.Fatalf("mounts %v: want /run/agentbox on a read-only root, one container", c.VolumeMounts)
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
