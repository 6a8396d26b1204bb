package kubernetes

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// poolRuntime connects to the test cluster with a pool (size idle pods;
// claims on); its pools and sessions are gone when the test ends.
func poolRuntime(t testing.TB, size int, notes *[]string) *Runtime {
	t.Helper()
	t.Setenv("KUBECONFIG", testutil.Kubeconfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	o := Options{UsePool: true, Pool: size}
	if notes != nil {
		o.Notice = func(l string) { mu.Lock(); *notes = append(*notes, l); mu.Unlock() }
	}
	rt, err := Connect(ctx, o)
	if err != nil {
		t.Fatalf("connecting to the test cluster: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

// poolConfig is a session shaped as the pool tests' pods (small limits).
func poolConfig(t testing.TB) sandbox.Config {
	return sandbox.Config{Workspace: t.TempDir(), WorkspaceCopy: true, CPUs: 0.5, MemoryBytes: 256 << 20, SessionTimeout: 10 * time.Minute}
}

// idlePods lists the servable idle pods of rt's pool for cfg.
func idlePods(t testing.TB, rt *Runtime, cfg sandbox.Config) []corev1.Pod {
	t.Helper()
	c := cfg
	if err := checkConfig(&c); err != nil {
		t.Fatal(err)
	}
	uid, gid, _ := podUser(c.User)
	key := poolKey(genericPod(c, uid, gid), isolated(c.Network))
	sel := labels.SelectorFromSet(labels.Set{labelPool: key, labelPoolOwner: rt.pools.id, labelPoolState: poolIdle}).String()
	list, err := rt.cs.CoreV1().Pods(rt.opts.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if servable(&p, 0, 0) == "" {
			out = append(out, p)
		}
	}
	return out
}

// waitIdle polls until rt's pool for cfg has n servable idle pods.
func waitIdle(t testing.TB, rt *Runtime, cfg sandbox.Config, n int) []corev1.Pod {
	t.Helper()
	rt.Warm(context.Background(), cfg)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if ps := idlePods(t, rt, cfg); len(ps) >= n {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not reach %d Ready idle pods in 3 minutes", n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Two processes' runtimes (each its own pool set, as two agentbox
// processes) claim at once from one pool: every session gets a pod of its
// own, every idle pod goes to exactly one of them, the rest start cold.
func TestPoolClaimsNeverShareK8s(t *testing.T) {
	keeper := poolRuntime(t, 2, nil)
	cfg := poolConfig(t)
	idle := waitIdle(t, keeper, cfg, 2)
	var notes []string
	a, b := poolRuntime(t, 0, &notes), poolRuntime(t, 0, &notes)
	type got struct {
		pod string
		err error
	}
	res := make(chan got, 4)
	var wg sync.WaitGroup
	for _, rt := range []*Runtime{a, b, a, b} {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			c := cfg
			c.Workspace = t.TempDir()
			s, err := rt.Start(ctx, c)
			if err != nil {
				res <- got{err: err}
				return
			}
			defer s.Close(context.Background())
			r, err := s.Exec(ctx, sandbox.ExecRequest{Command: "echo ok"})
			if err == nil && strings.TrimSpace(string(r.Output)) != "ok" {
				err = fmt.Errorf("exec said %q", r.Output)
			}
			res <- got{pod: s.(*session).name, err: err}
		})
	}
	wg.Wait()
	close(res)
	seen := map[string]bool{}
	for g := range res {
		if g.err != nil {
			t.Fatalf("a session failed: %v", g.err)
		}
		if seen[g.pod] {
			t.Fatalf("pod %s was handed to two sessions", g.pod)
		}
		seen[g.pod] = true
	}
	for _, p := range idle {
		if !seen[p.Name] {
			t.Errorf("idle pod %s went to no session (%v)", p.Name, notes)
		}
	}
	warm := 0
	for _, n := range notes {
		if strings.Contains(n, StartWarm) {
			warm++
		}
	}
	if warm < len(idle) || len(notes) != 4 {
		t.Fatalf("notes %q: want one per session, %d warm at least", notes, len(idle))
	}
}

// A pool pod that was evicted (Failed, reason Evicted) or is being deleted
// is never handed out, and the pool replaces it.
func TestPoolNeverHandsOutDeadPodsK8s(t *testing.T) {
	keeper := poolRuntime(t, 2, nil)
	cfg := poolConfig(t)
	idle := waitIdle(t, keeper, cfg, 2)
	pods := keeper.cs.CoreV1().Pods(keeper.opts.Namespace)
	ctx := context.Background()
	evict(t, keeper, idle[0].Name)
	grace := int64(30)
	if err := pods.Delete(ctx, idle[1].Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	dead := map[string]bool{idle[0].Name: true, idle[1].Name: true}
	var notes []string
	claimer := poolRuntime(t, 0, &notes)
	for range 2 {
		s := startOn(t, claimer, cfg)
		if dead[s.name] {
			t.Fatalf("a dead pool pod %s was handed out (%v)", s.name, notes)
		}
		r, err := s.Exec(ctx, sandbox.ExecRequest{Command: "echo ok"})
		if err != nil || strings.TrimSpace(string(r.Output)) != "ok" {
			t.Fatalf("exec: %q %v", r.Output, err)
		}
		_ = s.Close(ctx)
	}
	// The keeper replaces them: two Ready idle pods, neither a dead one,
	// and the evicted one deleted.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		fresh := 0
		for _, p := range idlePods(t, keeper, cfg) {
			if !dead[p.Name] {
				fresh++
			}
		}
		_, err := pods.Get(ctx, idle[0].Name, metav1.GetOptions{})
		if fresh >= 2 && apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not replace its dead pods (fresh %d, evicted pod: %v)", fresh, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// evict marks the pod Failed, reason Evicted, as the kubelet does when it
// evicts one, and returns once the kubelet holds it so: its container no
// longer runs, or the pool is deleting it. The kubelet owns a pod's
// status: its periodic status sync can write Running back over a phase it
// did not write itself, with the container still running (about one run
// in ten: the pod was then claimed as the live, Running pod it was again),
// so the mark is written again until the kubelet has acted on it.
func evict(t *testing.T, rt *Runtime, name string) {
	t.Helper()
	ctx := context.Background()
	pods := rt.cs.CoreV1().Pods(rt.opts.Namespace)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return // the pool replaced it already
		}
		if err != nil {
			t.Fatalf("reading the pod to evict: %v", err)
		}
		if p.Status.Phase != corev1.PodFailed {
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "test: evicted"
			if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
				t.Fatalf("marking a pool pod evicted: %v", err)
			}
		} else if p.DeletionTimestamp != nil || len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kubelet did not take pod %s as evicted in 2 minutes (phase %s)", name, p.Status.Phase)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The pool honours sandbox.runtime: runsc becomes the RuntimeClass whose
// handler is runsc (gvisor), for pool pods as for cold ones, and a session
// on a claimed pod runs under gVisor.
func TestPoolGVisorK8s(t *testing.T) {
	keeper := poolRuntime(t, 1, nil)
	ctx := context.Background()
	if _, err := keeper.cs.NodeV1().RuntimeClasses().Get(ctx, "gvisor", metav1.GetOptions{}); err != nil {
		if os.Getenv("AGENTBOX_REQUIRE_RUNSC") == "1" {
			t.Fatalf("the cluster has no RuntimeClass gvisor and AGENTBOX_REQUIRE_RUNSC=1 (make k8s-up installs runsc): %v", err)
		}
		t.Skipf("the cluster has no RuntimeClass gvisor (runsc not installed; AGENTBOX_REQUIRE_RUNSC=1 fails instead): %v", err)
	}
	cfg := poolConfig(t)
	cfg.Runtime = "runsc"
	c := cfg
	c.Runtime = "gvisor"
	idle := waitIdle(t, keeper, c, 1)
	if rc := idle[0].Spec.RuntimeClassName; rc == nil || *rc != "gvisor" {
		t.Fatalf("pool pod runtime class %v", rc)
	}
	var notes []string
	s := startOn(t, poolRuntime(t, 0, &notes), cfg)
	if s.name != idle[0].Name {
		t.Fatalf("got %s, not the idle gVisor pod %s (%v)", s.name, idle[0].Name, notes)
	}
	// gVisor's /proc has no NoNewPrivs line (runc's has).
	r, err := s.Exec(ctx, sandbox.ExecRequest{Command: "grep -c ^NoNewPrivs /proc/self/status; echo done"})
	if err != nil || !strings.HasPrefix(string(r.Output), "0\n") {
		t.Fatalf("not under gVisor: %q %v", r.Output, err)
	}
}

// TestPoolHelperProcess is the owner process of TestPoolKill9GCK8s: it
// keeps a pool, claims one pod for a session, says so and waits to be
// killed.
func TestPoolHelperProcess(t *testing.T) {
	if os.Getenv("AGENTBOX_POOL_HELPER") != "1" {
		t.Skip("the helper process of TestPoolKill9GCK8s")
	}
	rt := poolRuntime(t, 2, nil)
	cfg := poolConfig(t)
	waitIdle(t, rt, cfg, 1)
	s := startOn(t, rt, cfg)
	fmt.Printf("READY %s %s %s\n", rt.pools.id, s.name, s.id)
	select {}
}

// kill -9 of a process that keeps a pool and has a session on a claimed
// pod, then gc: no pod, NetworkPolicy or ConfigMap of it is left.
func TestPoolKill9GCK8s(t *testing.T) {
	rt := testRuntime(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestPoolHelperProcess$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), "AGENTBOX_POOL_HELPER=1", "KUBECONFIG="+testutil.Kubeconfig(t))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var poolID, sessPod, sid string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "READY" {
			poolID, sessPod, sid = f[1], f[2], f[3]
			break
		}
	}
	if poolID == "" {
		t.Fatal("the helper did not get ready")
	}
	ctx := context.Background()
	ns := rt.opts.Namespace
	if _, err := rt.cs.CoreV1().ConfigMaps(ns).Get(ctx, "agentbox-"+poolID, metav1.GetOptions{}); err != nil {
		t.Fatalf("the helper's pool ConfigMap: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	removed, err := rt.GC(ctx, sandbox.GCOptions{})
	if err != nil {
		t.Fatalf("gc: %v", err)
	}
	sel := metav1.ListOptions{LabelSelector: labelPoolOwner + "=" + poolID}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods, err1 := rt.cs.CoreV1().Pods(ns).List(ctx, sel)
		cms, err2 := rt.cs.CoreV1().ConfigMaps(ns).List(ctx, sel)
		nps, err3 := rt.cs.NetworkingV1().NetworkPolicies(ns).List(ctx, sel)
		_, err4 := rt.cs.CoreV1().Pods(ns).Get(ctx, sessPod, metav1.GetOptions{})
		_, err5 := rt.cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, podName(sid), metav1.GetOptions{})
		if err1 == nil && err2 == nil && err3 == nil && len(pods.Items) == 0 && len(cms.Items) == 0 && len(nps.Items) == 0 && apierrors.IsNotFound(err4) && apierrors.IsNotFound(err5) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left after gc (removed %v): pods %v, config maps %v, policies %v, session pod %v, its policy %v", removed, pods, cms, nps, err4, err5)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A pod's usage comes from its own cgroup: a burn of a million loop turns
// (bash builtins, about a CPU-second) shows, and so does memory.
func TestUsageK8s(t *testing.T) {
	rt := testRuntime(t)
	cfg := poolConfig(t)
	cfg.CPUs = 1
	s := startOn(t, rt, cfg)
	ctx := context.Background()
	before, err := s.Usage(ctx)
	if err != nil || !before.Known {
		t.Fatalf("usage before: %+v %v", before, err)
	}
	if _, err := s.Exec(ctx, sandbox.ExecRequest{Command: `i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done`, Timeout: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	after, err := s.Usage(ctx)
	if err != nil || !after.Known || after.CPUSeconds-before.CPUSeconds < 0.25 || after.PeakMemoryBytes <= 0 {
		t.Fatalf("usage %+v after a busy loop, %+v before (%v)", after, before, err)
	}
}
