package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testConfig(t *testing.T) sandbox.Config {
	cfg := sandbox.Config{Workspace: t.TempDir(), WorkspaceCopy: true, CPUs: 1.5, MemoryBytes: 512 << 20, DiskBytes: 1 << 30,
		SessionTimeout: time.Hour, Runtime: "gvisor", Env: map[string]string{"B": "2", "A": "1"}}
	if err := checkConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The pod spec carries every hardening default, checked field by field
// after a round trip through a (fake) API server.
func TestPodSpecHardening(t *testing.T) {
	cfg := testConfig(t)
	id := sandbox.NewID()
	cs := newFake()
	owner := sandbox.OwnerLabels()
	if _, err := cs.CoreV1().Pods("agentbox").Create(context.Background(), podSpec(cfg, id, owner, "h", 1234, 1234), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods("agentbox").Get(context.Background(), podName(id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sp := pod.Spec
	if pod.Labels[sandbox.LabelSession] != id || pod.Annotations[sandbox.LabelOwner] != owner[sandbox.LabelOwner] ||
		pod.Annotations[sandbox.LabelOwnerBoot] == "" || pod.Annotations[sandbox.LabelTimeout] != "3600" {
		t.Fatalf("identity: labels %v annotations %v", pod.Labels, pod.Annotations)
	}
	if sp.RestartPolicy != corev1.RestartPolicyNever || sp.ActiveDeadlineSeconds == nil || *sp.ActiveDeadlineSeconds != int64((time.Hour+deadlineMargin).Seconds()) {
		t.Fatalf("restart policy %s, deadline %v", sp.RestartPolicy, sp.ActiveDeadlineSeconds)
	}
	if sp.AutomountServiceAccountToken == nil || *sp.AutomountServiceAccountToken || sp.EnableServiceLinks == nil || *sp.EnableServiceLinks {
		t.Fatal("service account token or service links")
	}
	if sp.HostNetwork || sp.HostPID || sp.HostIPC || sp.ShareProcessNamespace != nil {
		t.Fatal("host namespaces")
	}
	if sp.RuntimeClassName == nil || *sp.RuntimeClassName != "gvisor" {
		t.Fatalf("runtime class %v", sp.RuntimeClassName)
	}
	psc := sp.SecurityContext
	if psc == nil || !*psc.RunAsNonRoot || *psc.RunAsUser != 1234 || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("pod security context %+v", psc)
	}
	for _, v := range sp.Volumes {
		if v.HostPath != nil || v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil {
			t.Fatalf("volume %s is not a bounded emptyDir", v.Name)
		}
	}
	if len(sp.Containers) != 1 || len(sp.InitContainers) != 0 || len(sp.EphemeralContainers) != 0 {
		t.Fatal("one container only")
	}
	c := sp.Containers[0]
	sc := c.SecurityContext
	if !*sc.RunAsNonRoot || *sc.RunAsUser != 1234 || *sc.AllowPrivilegeEscalation || *sc.Privileged || !*sc.ReadOnlyRootFilesystem ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("container security context %+v", sc)
	}
	if !c.Stdin || !c.StdinOnce || c.TTY || c.ImagePullPolicy != corev1.PullIfNotPresent || c.Image != DefaultImage ||
		strings.Join(c.Command, " ") != ExecutorPath+" executor" || c.WorkingDir != sandbox.WorkspaceDir {
		t.Fatalf("container %+v", c)
	}
	if len(c.Ports) != 0 || len(c.EnvFrom) != 0 {
		t.Fatal("ports or env from the cluster")
	}
	cpu, mem := resource.MustParse("1500m"), resource.MustParse("512Mi")
	for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		if q := rl[corev1.ResourceCPU]; q.Cmp(cpu) != 0 {
			t.Fatalf("cpu %s", q.String())
		}
		if q := rl[corev1.ResourceMemory]; q.Cmp(mem) != 0 {
			t.Fatalf("memory %s", q.String())
		}
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
	}
	if strings.Join(env, ",") != "PATH,HOME,A,B" {
		t.Fatalf("env %v: only what the policy passes", env)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	if mounts["/workspace"] != "workspace" || mounts["/tmp"] != "tmp" || len(mounts) != 2 {
		t.Fatalf("mounts %v", mounts)
	}
	for _, v := range sp.Volumes {
		if v.Name == "workspace" && v.EmptyDir.SizeLimit.Value() != 1<<30 {
			t.Fatalf("workspace bound %s, want limits.disk", v.EmptyDir.SizeLimit)
		}
	}
}

func TestDenyAllPolicy(t *testing.T) {
	cfg := testConfig(t)
	np := denyAllPolicy("abcdef0123456789", cfg, sandbox.OwnerLabels(), "h")
	if np.Spec.PodSelector.MatchLabels[sandbox.LabelSession] != "abcdef0123456789" || len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 2 {
		t.Fatalf("policy %+v", np.Spec)
	}
}

func TestCheckConfigRefusals(t *testing.T) {
	ws := t.TempDir()
	cases := []struct {
		name string
		cfg  sandbox.Config
		want string
	}{
		{"rw on the real workspace", sandbox.Config{Workspace: ws}, "agentbox changes"},
		{"proxy", sandbox.Config{Workspace: ws, WorkspaceCopy: true, Network: sandbox.NetworkProxy}, "proxy"},
		{"overlay", sandbox.Config{Workspace: ws, WorkspaceCopy: true, Overlay: &sandbox.Overlay{}}, "overlay"},
	}
	for _, c := range cases {
		err := checkConfig(&c.cfg)
		if !errors.Is(err, sandbox.ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	ro := sandbox.Config{Workspace: ws, WorkspaceMode: sandbox.WorkspaceRO}
	if err := checkConfig(&ro); err != nil || ro.Network != sandbox.NetworkNone || ro.DiskBytes != DefaultDiskBytes {
		t.Fatalf("ro on the real workspace: %v %+v", err, ro)
	}
}

func TestPodUser(t *testing.T) {
	for _, c := range []struct {
		in       string
		uid, gid int64
		bad      bool
	}{{"1001:1002", 1001, 1002, false}, {"1001", 1001, 1001, false}, {"0:0", fallbackUID, fallbackUID, false}, {"root", 0, 0, true}} {
		uid, gid, err := podUser(c.in)
		if (err != nil) != c.bad || !c.bad && (uid != c.uid || gid != c.gid) {
			t.Errorf("%q: %d:%d %v", c.in, uid, gid, err)
		}
	}
	if uid, _, _ := podUser(""); uid == 0 {
		t.Error("the pod must never run as uid 0")
	}
}

func TestPodState(t *testing.T) {
	waiting := func(reason string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "m"}}}}}}
	}
	if _, _, err := podState(waiting("ErrImageNeverPull"), "x"); !errors.Is(err, sandbox.ErrImageMissing) || !strings.Contains(err.Error(), "image build --executor") {
		t.Fatalf("missing image: %v", err)
	}
	if _, _, err := podState(waiting("CreateContainerConfigError"), "x"); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("config error: %v", err)
	}
	if ready, why, err := podState(waiting("ContainerCreating"), "x"); ready || err != nil || !strings.Contains(why, "ContainerCreating") {
		t.Fatalf("creating: %v %q %v", ready, why, err)
	}
	unsched := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes have enough memory"}}}}
	if _, why, err := podState(unsched, "x"); err != nil || !strings.Contains(why, "enough memory") {
		t.Fatalf("unschedulable: %q %v", why, err)
	}
	running := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	if ready, _, err := podState(running, "x"); !ready || err != nil {
		t.Fatal("running")
	}
}

// doctor refuses network: none on a cluster whose pods get interfaces
// beyond lo, unless the operator asserts enforcement (the probe's
// interface list is the seam).
func TestDoctorNetpolRefusal(t *testing.T) {
	cs := newFake(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agentbox"}})
	for _, c := range []struct {
		ifaces   []string
		asserted bool
		fail     bool
	}{{[]string{"lo"}, false, false}, {[]string{"lo", "eth0"}, false, true}, {[]string{"lo", "eth0"}, true, false}} {
		rt := New(cs, nil, Options{NetpolEnforced: c.asserted})
		rt.probe = func(context.Context, string) (Probe, error) { return Probe{Ifaces: c.ifaces}, nil }
		var got *Check
		for _, ch := range rt.Doctor(context.Background(), "") {
			if ch.Name == "network none" {
				got = &ch
			}
		}
		if got == nil || (got.Err != nil) != c.fail {
			t.Fatalf("%v asserted=%v: %+v", c.ifaces, c.asserted, got)
		}
		if err := rt.checkIsolated(c.ifaces); (err != nil) != c.fail {
			t.Fatalf("Start's check on %v asserted=%v: %v", c.ifaces, c.asserted, err)
		}
	}
}

// The manifest cache key comes from a container status's image id: an id
// or a digest reference gives sha256:<hex>; anything else gives no key.
func TestManifestKey(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	cases := map[string]string{
		"sha256:" + hex:                        "sha256:" + hex,
		"docker.io/agentbox/k8s@sha256:" + hex: "sha256:" + hex,
		"import-2026-12-02@sha256:" + hex:      "sha256:" + hex,
		"":                                     "",
		"sha256:" + hex[:63]:                   "",
		"sha256:" + strings.ToUpper(hex):       "",
		"agentbox/k8s:latest":                  "",
		"docker.io/x/sha256:" + hex:            "",
		"sha256:" + hex + "/../../etc":         "",
	}
	for in, want := range cases {
		if got := manifestKey(in); got != want {
			t.Errorf("manifestKey(%q) = %q, want %q", in, got, want)
		}
	}
}
