package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// The pool key follows everything that shapes the pod and nothing that is
// the session's alone.
func TestPoolKey(t *testing.T) {
	base := testConfig(t)
	key := func(cfg sandbox.Config) string { return poolKey(genericPod(cfg, 1234, 1234), isolated(cfg.Network)) }
	k := key(base)
	same := base
	same.SessionID, same.SessionTimeout = sandbox.NewID(), 5*time.Minute
	if key(same) != k {
		t.Fatal("the session id or timeout changed the pool key")
	}
	for name, mut := range map[string]func(*sandbox.Config){
		"image":   func(c *sandbox.Config) { c.Image = "other:1" },
		"runtime": func(c *sandbox.Config) { c.Runtime = "" },
		"cpus":    func(c *sandbox.Config) { c.CPUs = 2 },
		"memory":  func(c *sandbox.Config) { c.MemoryBytes <<= 1 },
		"disk":    func(c *sandbox.Config) { c.DiskBytes <<= 1 },
		"env":     func(c *sandbox.Config) { c.Env = map[string]string{"A": "other"} },
		"network": func(c *sandbox.Config) { c.Network = sandbox.NetworkOpen },
	} {
		c := base
		mut(&c)
		if key(c) == k {
			t.Errorf("%s: same pool key", name)
		}
	}
	if genericPod(base, 1, 1).Spec.ActiveDeadlineSeconds == nil {
		t.Fatal("a pool pod without a deadline")
	}
}

// A pod under the pool's label is handed out only if it is hardened as
// this process's own would be: every weakened variant is refused.
func TestPoolSpecMatches(t *testing.T) {
	cfg := testConfig(t)
	want := genericPod(cfg, 1234, 1234)
	cs := newFake()
	p := want.DeepCopy()
	p.Name = "agentbox-x"
	got, err := cs.CoreV1().Pods("agentbox").Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := specMatches(want, got); err != nil {
		t.Fatalf("its own pod refused: %v", err)
	}
	yes := true
	for name, mut := range map[string]func(*corev1.Pod){
		"privileged": func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.Privileged = &yes },
		"escalation": func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &yes },
		"caps": func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		},
		"root":    func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsUser = new(int64) },
		"hostnet": func(p *corev1.Pod) { p.Spec.HostNetwork = true },
		"hostpid": func(p *corev1.Pod) { p.Spec.HostPID = true },
		"hostpath": func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}
		},
		"image":   func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil:1" },
		"command": func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"/bin/sh"} },
		"args":    func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"x"} },
		"env": func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "LD_PRELOAD", Value: "/x"})
		},
		"runtime": func(p *corev1.Pod) { p.Spec.RuntimeClassName = nil },
		"sidecar": func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0]) },
		"init":    func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{p.Spec.Containers[0]} },
		"token":   func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = &yes },
		"memory": func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("64Gi")
		},
		"mounts":      func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].MountPath = "/etc" },
		"seccomp":     func(p *corev1.Pod) { p.Spec.SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined },
		"rootfs":      func(p *corev1.Pod) { no := false; p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = &no },
		"lifecycle":   func(p *corev1.Pod) { p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{} },
		"shareprocns": func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = &yes },
	} {
		bad := got.DeepCopy()
		mut(bad)
		if err := specMatches(want, bad); err == nil {
			t.Errorf("%s: a weakened pod would be handed out", name)
		}
	}
}

// Only a running, Ready pod with room in its deadline is handed out.
func TestPoolServable(t *testing.T) {
	now := metav1.Now()
	ok := func() *corev1.Pod {
		d := int64(3600)
		return &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: &d}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	}
	if why := servable(ok(), 600, 10); why != "" {
		t.Fatalf("a good pod refused: %s", why)
	}
	for name, mut := range map[string]func(*corev1.Pod){
		"deleting":  func(p *corev1.Pod) { p.DeletionTimestamp = &now },
		"evicted":   func(p *corev1.Pod) { p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted" },
		"succeeded": func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded },
		"pending":   func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending },
		"notready":  func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse },
		"restarted": func(p *corev1.Pod) { p.Status.ContainerStatuses[0].RestartCount = 1 },
		"exited": func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}
		},
		"deadline": func(p *corev1.Pod) { d := int64(605); p.Spec.ActiveDeadlineSeconds = &d },
	} {
		p := ok()
		mut(p)
		if why := servable(p, 600, 10); why == "" {
			t.Errorf("%s: handed out", name)
		}
	}
}

// The claim makes the pod the session's: its labels, the claimer's owner
// annotations, a deadline shrunk to the session's, the pool's owner
// reference gone when the claimer keeps no pool.
func TestPoolClaimedUpdate(t *testing.T) {
	rt := New(newFake(), nil, Options{UsePool: true})
	cfg := testConfig(t)
	p := rt.pools.get(genericPod(cfg, 1, 1), true)
	pod := p.newPod()
	pod.Annotations[sandbox.LabelOwner] = "1:1"
	pod.OwnerReferences = []metav1.OwnerReference{{Name: "someone-else"}}
	s := &session{rt: rt, id: sandbox.NewID(), cfg: cfg}
	c := claimed(pod, s, rt.pools, 4200, 100)
	if c.Labels[labelPoolState] != poolClaimed || c.Labels[sandbox.LabelSession] != s.id || c.Labels[labelPool] != p.key {
		t.Fatalf("labels %v", c.Labels)
	}
	if c.Annotations[sandbox.LabelOwner] != rt.owner[sandbox.LabelOwner] || c.Annotations[sandbox.LabelTimeout] != "3600" {
		t.Fatalf("annotations %v", c.Annotations)
	}
	if len(c.OwnerReferences) != 0 {
		t.Fatalf("owner references %v", c.OwnerReferences)
	}
	if *c.Spec.ActiveDeadlineSeconds != 4300 {
		t.Fatalf("deadline %d", *c.Spec.ActiveDeadlineSeconds)
	}
	if pod.Labels[labelPoolState] != poolIdle {
		t.Fatal("the listed pod was changed in place")
	}
	if !strings.HasPrefix(c.Name, "agentbox-") {
		t.Fatal(c.Name)
	}
}

// The pod's cgroup figures, v1 and v2, as usageScript prints them.
func TestParseUsage(t *testing.T) {
	v1 := "cpuacct 2500000000\npeak 73400320\noom oom_kill_disable 0\noom under_oom 0\noom oom_kill 2\n"
	if u := parseUsage(v1); !u.Known || u.CPUSeconds != 2.5 || u.PeakMemoryBytes != 73400320 || u.OOMKills != 2 {
		t.Fatalf("v1: %+v", u)
	}
	v2 := "cpustat usage_usec 1500000\ncpustat user_usec 1\npeak 1048576\noom low 0\noom oom_kill 1\nio 8:0 rbytes=1 wbytes=4096 rios=1 wios=1\n"
	if u := parseUsage(v2); !u.Known || u.CPUSeconds != 1.5 || u.PeakMemoryBytes != 1<<20 || u.OOMKills != 1 || u.BytesWritten != 4096 {
		t.Fatalf("v2: %+v", u)
	}
	if u := parseUsage(""); u.Known {
		t.Fatal("nothing read, yet known")
	}
}

// A claim on a (fake) cluster: a pod lost to another process (a conflict)
// makes it try the next; an evicted pod and a pod not hardened as ours are
// never handed out; an empty pool says so.
func TestPoolClaimOnFakeCluster(t *testing.T) {
	cs := newFake()
	versioned(cs)
	rt := New(cs, nil, Options{UsePool: true})
	cfg := testConfig(t)
	p := rt.pools.get(genericPod(cfg, 1234, 1234), true)
	ctx := context.Background()
	mk := func(mut func(*corev1.Pod)) string {
		pod := p.newPod()
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: time.Now()},
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
		mut(pod)
		if _, err := cs.CoreV1().Pods("agentbox").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return pod.Name
	}
	evicted := mk(func(p *corev1.Pod) { p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted" })
	tampered := mk(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil:1" })
	good1, good2 := mk(func(*corev1.Pod) {}), mk(func(*corev1.Pod) {})
	lost := ""
	cs.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if lost == "" {
			lost = a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod).Name
			return true, nil, apierrors.NewConflict(corev1.Resource("pods"), lost, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	s := &session{rt: rt, id: sandbox.NewID(), cfg: cfg}
	got, why, err := p.claim(ctx, s, noGuard)
	if err != nil || got == nil {
		t.Fatalf("claim: %v %q", err, why)
	}
	if got.Name == lost || got.Name == evicted || got.Name == tampered || got.Name != good1 && got.Name != good2 {
		t.Fatalf("claimed %s (lost %s, evicted %s, tampered %s)", got.Name, lost, evicted, tampered)
	}
	if got.Labels[labelPoolState] != poolClaimed || got.Labels[sandbox.LabelSession] != s.id {
		t.Fatalf("claimed pod labels %v", got.Labels)
	}
	// The pod lost to the conflict is still idle (the other process's in
	// a real cluster); once it is taken too, the pool is empty.
	s2 := &session{rt: rt, id: sandbox.NewID(), cfg: cfg}
	if got2, _, err := p.claim(ctx, s2, noGuard); err != nil || got2 == nil || got2.Name != lost {
		t.Fatalf("second claim: %v %v", got2, err)
	}
	if got3, why, err := p.claim(ctx, &session{rt: rt, id: sandbox.NewID(), cfg: cfg}, noGuard); err != nil || got3 != nil || why != "pool empty" {
		t.Fatalf("third claim: %v %q %v", got3, why, err)
	}
}

// noGuard is a session whose NetworkPolicy exists already.
func noGuard() error { return nil }

// A claim waits for the session's own NetworkPolicy before any pod becomes
// the session's: when the cluster refused that policy, no pod is claimed
// and every pod is still idle.
func TestPoolClaimWaitsForGuard(t *testing.T) {
	cs := newFake()
	rt := New(cs, nil, Options{UsePool: true})
	cfg := testConfig(t)
	p := rt.pools.get(genericPod(cfg, 1234, 1234), true)
	ctx := context.Background()
	pod := p.newPod()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: time.Now()},
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	if _, err := cs.CoreV1().Pods("agentbox").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("creating the NetworkPolicy: forbidden")
	got, _, err := p.claim(ctx, &session{rt: rt, id: sandbox.NewID(), cfg: cfg}, func() error { return refused })
	if !errors.Is(err, refused) || got != nil {
		t.Fatalf("claim with its policy refused: %v %v", got, err)
	}
	now, err := cs.CoreV1().Pods("agentbox").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || now.Labels[labelPoolState] != poolIdle {
		t.Fatalf("pod after the refused claim: %v %v", now.Labels, err)
	}
}

// A cluster that refuses the pool's pods (a quota) leaves the pool empty,
// and the cold start says why in one line.
func TestPoolRefusedFallsBackCold(t *testing.T) {
	cs := newFake()
	cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "agentbox-x", errors.New("exceeded quota: pods, requested: pods=1, used: pods=4, limited: pods=4"))
	})
	rt := New(cs, nil, Options{Pool: 2})
	defer rt.Close(context.Background())
	cfg := testConfig(t)
	p := rt.pools.get(genericPod(cfg, 1234, 1234), true)
	deadline := time.Now().Add(time.Minute)
	for p.refusal() == "" {
		if time.Now().After(deadline) {
			t.Fatal("the refill never reported the refusal")
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, why, err := p.claim(context.Background(), &session{rt: rt, id: sandbox.NewID(), cfg: cfg}, noGuard)
	if err != nil || got != nil || !strings.HasPrefix(why, "pool empty (") || !strings.Contains(why, "exceeded quota") || strings.Contains(why, "\n") {
		t.Fatalf("claim: %v %q %v", got, why, err)
	}
}
