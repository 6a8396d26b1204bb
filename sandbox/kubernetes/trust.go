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

// trustVolume is the directory of sandbox.CABundlePath.
const trustVolume = "agentbox-run"

// withTrustBundle gives the pod of a session whose proxy intercepts TLS a
// small memory-backed directory at sandbox.CABundlePath's: the executor
// writes the bundle there (the image's system bundle followed by the
// session CA it gets in sandbox.TrustPEMEnv) before it serves, read-only
// (mode 0444). The root filesystem stays read-only; a pod without a CA
// gets nothing.
func withTrustBundle(pod *corev1.Pod, pem []byte) {
	if len(pem) == 0 {
		return
	}
	size := resource.NewQuantity(runBytes, resource.BinarySI)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: trustVolume,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: size}}})
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: trustVolume, MountPath: filepath.Dir(sandbox.CABundlePath)})
}
