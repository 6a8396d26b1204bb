package kubernetes

import (
	"path/filepath"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// runBytes bounds the memory-backed directory the session's CA bundle is
// written in (an image's system bundle is well under a megabyte).
const runBytes = 16 << 20

// trustVolume is the directory of sandbox.CABundlePath; trustContainer
// the init container that writes the bundle in it.
const (
	trustVolume    = "agentbox-run"
	trustContainer = "ca-bundle"
)

// withTrustBundle gives the pod of a session whose proxy intercepts TLS
// its CA bundle, as Docker's read-only mount does: a small memory-backed
// emptyDir that an init container (the same image and hardening, the
// executor's `--ca-bundle`) fills with the image's system bundle followed
// by the session CA it gets in sandbox.TrustPEMEnv, and that the sandbox's
// container mounts read-only at sandbox.CABundlePath's directory. The
// sandbox's container never sees the variable; a pod without a CA gets
// nothing.
func withTrustBundle(pod *corev1.Pod, pem []byte) {
	if len(pem) == 0 {
		return
	}
	size := resource.NewQuantity(runBytes, resource.BinarySI)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: trustVolume,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: size}}})
	dir := filepath.Dir(sandbox.CABundlePath)
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: trustVolume, MountPath: dir, ReadOnly: true})
	pod.Spec.InitContainers = []corev1.Container{{
		Name:                     trustContainer,
		Image:                    c.Image,
		ImagePullPolicy:          c.ImagePullPolicy,
		Command:                  []string{ExecutorPath, "executor", "--ca-bundle"},
		Env:                      []corev1.EnvVar{{Name: sandbox.TrustPEMEnv, Value: string(pem)}},
		Resources:                *c.Resources.DeepCopy(),
		SecurityContext:          c.SecurityContext.DeepCopy(),
		VolumeMounts:             []corev1.VolumeMount{{Name: trustVolume, MountPath: dir}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}}
}
