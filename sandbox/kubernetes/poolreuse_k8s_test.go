package kubernetes

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A claimed pod is never reused: once its session closes it is deleted
// (never relabelled idle), the pool refills with another pod, and a
// session there sees nothing of the first one's.
func TestPoolNeverReusesK8s(t *testing.T) {
	keeper := poolRuntime(t, 1, nil)
	cfg := poolConfig(t)
	idle := waitIdle(t, keeper, cfg, 1)
	var notes []string
	claimer := poolRuntime(t, 0, &notes)
	ctx := context.Background()
	s := startOn(t, claimer, cfg)
	if s.name != idle[0].Name || s.info.Start != sandbox.StartWarm {
		t.Fatalf("got %s (%s), not the idle pod %s (%v)", s.name, s.info.Start, idle[0].Name, notes)
	}
	if _, err := s.Exec(ctx, sandbox.ExecRequest{Command: "echo first-session-tmp > /tmp/left-behind; echo first-session-ws > /workspace/mine.txt"}); err != nil {
		t.Fatal(err)
	}
	used := s.name
	if err := s.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	pods := keeper.cs.CoreV1().Pods(keeper.opts.Namespace)
	testutil.Eventually(t, 2*time.Minute, "the used pod to be deleted", func() bool {
		p, err := pods.Get(ctx, used, metav1.GetOptions{})
		if err == nil && p.Labels[labelPoolState] == poolIdle {
			t.Fatalf("the used pod %s is idle in the pool again", used)
		}
		return apierrors.IsNotFound(err)
	})
	fresh := waitIdle(t, keeper, cfg, 1)
	if fresh[0].Name == used {
		t.Fatalf("the pool refilled with the used pod %s", used)
	}
	c := cfg
	c.Workspace = t.TempDir()
	s2 := startOn(t, claimer, c)
	if s2.name == used || s2.info.Start != sandbox.StartWarm {
		t.Fatalf("second session on %s (%s), used pod %s (%v)", s2.name, s2.info.Start, used, notes)
	}
	r, err := s2.Exec(ctx, sandbox.ExecRequest{Command: "cat /tmp/left-behind /workspace/mine.txt 2>&1; echo end"})
	if err != nil || strings.Contains(string(r.Output), "first-session") || !strings.HasSuffix(string(r.Output), "end\n") {
		t.Fatalf("the next session saw the first one's files: %q %v", r.Output, err)
	}
}

// quotaNamespace makes a namespace of its own with a ResourceQuota of
// `pods` pods (the budget) and waits until the cluster has computed the
// quota and made the namespace's service account; it goes with the test.
func quotaNamespace(t *testing.T, rt *Runtime, pods string) string {
	t.Helper()
	ctx := context.Background()
	ns := "agentbox-quota-" + sandbox.NewID()[:8]
	if _, err := rt.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a test namespace: %v", err)
	}
	t.Cleanup(func() { _ = rt.cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "budget"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(pods)}}}
	if _, err := rt.cs.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "the quota's status and the default service account", func() bool {
		q, err := rt.cs.CoreV1().ResourceQuotas(ns).Get(ctx, "budget", metav1.GetOptions{})
		_, serr := rt.cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil && serr == nil && len(q.Status.Hard) > 0
	})
	return ns
}

// The namespace's ResourceQuota is the budget the pool respects: under a
// quota of 3 pods a pool of 3 keeps 2 idle (one left for a session), says
// why, the first sessions claim those, the next starts cold in the room
// left with the reason in one line, and past the budget a session is
// refused by the quota.
func TestPoolQuotaBudgetK8s(t *testing.T) {
	admin := testRuntime(t)
	ns := quotaNamespace(t, admin, "3")
	t.Setenv("KUBECONFIG", testutil.Kubeconfig(t))
	var mu sync.Mutex
	var notes []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	rt, err := Connect(ctx, Options{Namespace: ns, Pool: 3, Notice: func(l string) { mu.Lock(); notes = append(notes, l); mu.Unlock() }})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	cfg := poolConfig(t)
	cfg.CPUs = 0.25
	idle := waitIdle(t, rt, cfg, 2)
	c := cfg
	if err := checkConfig(&c); err != nil {
		t.Fatal(err)
	}
	uid, gid, _ := podUser(c.User)
	p := rt.pools.get(genericPod(c, uid, gid), isolated(c.Network))
	testutil.Eventually(t, time.Minute, "the pool to say it stopped at the budget", func() bool { return p.refusal() != "" })
	if why := p.refusal(); !strings.Contains(why, "ResourceQuota budget has pods") || strings.Contains(why, "\n") {
		t.Fatalf("the pool's reason: %q", why)
	}
	all, err := rt.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(all.Items) != 2 || len(idle) != 2 {
		t.Fatalf("pods in the namespace under a 3-pod budget with a pool of 3: %d (%v), want 2 idle", len(all.Items), err)
	}
	start := func() *session {
		c := cfg
		c.Workspace = t.TempDir()
		return startOn(t, rt, c)
	}
	s1, s2, s3 := start(), start(), start()
	for _, s := range []*session{s1, s2} {
		if s.info.Start != sandbox.StartWarm {
			t.Fatalf("session on %s started %s (%v)", s.name, s.info.Start, notes)
		}
	}
	mu.Lock()
	last := notes[len(notes)-1]
	mu.Unlock()
	if s3.info.Start != sandbox.StartCold || !strings.HasPrefix(last, "kubernetes: cold start: pool empty (") ||
		!strings.Contains(last, "ResourceQuota budget") || strings.Contains(last, "\n") {
		t.Fatalf("third session %s, its line %q", s3.info.Start, last)
	}
	if r, err := s3.Exec(context.Background(), sandbox.ExecRequest{Command: "echo ok"}); err != nil || strings.TrimSpace(string(r.Output)) != "ok" {
		t.Fatalf("the cold session: %q %v", r.Output, err)
	}
	c4 := cfg
	c4.Workspace = t.TempDir()
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer scancel()
	if s4, err := rt.Start(sctx, c4); err == nil {
		_ = s4.Close(context.Background())
		t.Fatal("a fourth session started past the namespace's 3-pod budget")
	} else if !strings.Contains(err.Error(), "ResourceQuota has no room") || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("the fourth session's refusal: %v", err)
	}
}
