package main_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	k8s "github.com/agentbox/agentbox/sandbox/kubernetes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var warmRe = regexp.MustCompile(`warm pod from pool \((agentbox-[0-9a-f]+),`)

// k8sIdlePoolPods counts the idle, Ready pool pods whose owner is pid.
func k8sIdlePoolPods(t *testing.T, cs k8s.Clients, pid int) int {
	t.Helper()
	list, err := cs.CoreV1().Pods("agentbox").List(context.Background(), metav1.ListOptions{LabelSelector: "agentbox.pool.state=idle"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range list.Items {
		owner, _, _ := strings.Cut(p.Annotations["agentbox.owner"], ":")
		if owner != strconv.Itoa(pid) || p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				n++
			}
		}
	}
	return n
}

// One agentbox process keeps a warm pool (--pool 2) while its own session
// runs; two one-shot `agentbox exec --pool 0` processes at once, under the
// built-in default policy, each start on a warm pod of that pool, never
// the same one, and answer. When the keeper ends, its idle pods go.
func TestK8sPoolExecDefaultPolicy(t *testing.T) {
	env := k8sEnv(t)
	cs := k8sClient(t)
	ws := t.TempDir()
	// The built-in default policy with half a CPU per sandbox (a file
	// layered on the default): the keeper's session and its two idle pods
	// request 1.5 CPUs, which the 2-core test node can schedule (at the
	// default 1 CPU each, the second idle pod stays Pending).
	pol := writeFile(t, filepath.Join(t.TempDir(), "half-cpu.yaml"), "version: 1\nsandbox:\n  limits: {cpus: 0.5}\n", 0o644)
	keeper := exec.Command(testutil.Binary(t), "exec", "--policy", pol, "--pool", "2", "--timeout", "5m", "--", "sleep 240")
	keeper.Dir, keeper.Env = ws, env
	if err := keeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = keeper.Process.Kill(); _ = keeper.Wait() })
	deadline := time.Now().Add(3 * time.Minute)
	for k8sIdlePoolPods(t, cs, keeper.Process.Pid) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the keeper's pool did not reach 2 Ready idle pods in 3 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	var wg sync.WaitGroup
	res := make([]result, 2)
	for i := range res {
		wg.Go(func() {
			res[i] = abCmd{dir: ws, fullEnv: env}.run(t, "exec", "--policy", pol, "--pool", "0", "--", "echo hello from the pool")
		})
	}
	wg.Wait()
	var pods []string
	for _, r := range res {
		m := warmRe.FindStringSubmatch(r.stderr)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "hello from the pool" || m == nil {
			t.Fatalf("exec through the pool: %d %q %q", r.code, r.stdout, r.stderr)
		}
		pods = append(pods, m[1])
	}
	if pods[0] == pods[1] {
		t.Fatalf("two processes got the same pod %s", pods[0])
	}
	// The keeper ends (SIGINT): its idle pods are removed with it.
	_ = keeper.Process.Signal(syscall.SIGINT)
	_ = keeper.Wait()
	for pid := keeper.Process.Pid; k8sIdlePoolPods(t, cs, pid) > 0; {
		if time.Now().After(deadline.Add(time.Minute)) {
			t.Fatal("the keeper's idle pods outlived it")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
