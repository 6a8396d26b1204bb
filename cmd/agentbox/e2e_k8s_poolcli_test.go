package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	k8s "github.com/agentbox/agentbox/sandbox/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// halfCPUPolicy is the built-in default policy with half a CPU per
// sandbox: a session and two idle pods fit the 2-core test node.
func halfCPUPolicy(t *testing.T) string {
	return writeFile(t, filepath.Join(t.TempDir(), "half-cpu.yaml"), "version: 1\nsandbox:\n  limits: {cpus: 0.5}\n", 0o644)
}

// k8sClient is a client of the test cluster.
func k8sClient(t *testing.T) k8s.Clients {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", testutil.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := k8s.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// A batch on the cluster with --pool 2: its own warm pool fills while the
// first tasks start cold, later tasks claim idle pods (sandbox_start
// "warm" in their results lines, counted in the summary), and every task's
// usage is measured from its pod's cgroup, warm or cold.
func TestK8sBatchPool(t *testing.T) {
	env := k8sEnv(t)
	tasks := batchFixture(t, 10, 10, "")
	out := filepath.Join(t.TempDir(), "results")
	r := abCmd{fullEnv: env}.run(t, "batch", tasks, "--backend", "kubernetes", "--policy", halfCPUPolicy(t), "--pool", "2", "--concurrency", "1",
		"--output", out, "--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--json")
	if r.code != 0 {
		t.Fatalf("batch: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var sum struct {
		Starts map[string]int `json:"sandbox_starts"`
		Tasks  []struct {
			ID    string `json:"id"`
			Start string `json:"sandbox_start"`
			Usage struct {
				Measured   bool    `json:"measured"`
				CPUSeconds float64 `json:"cpu_seconds"`
			} `json:"usage"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, r.stdout)
	}
	warm := 0
	for _, l := range sum.Tasks {
		if l.Start != "warm" && l.Start != "cold" {
			t.Errorf("task %s: sandbox_start %q, want warm or cold", l.ID, l.Start)
		}
		if l.Start == "warm" {
			warm++
		}
		if !l.Usage.Measured || l.Usage.CPUSeconds <= 0 {
			t.Errorf("task %s (%s): usage not measured: %+v", l.ID, l.Start, l.Usage)
		}
	}
	if len(sum.Tasks) != 10 || warm == 0 || sum.Starts["warm"] != warm || sum.Starts["warm"]+sum.Starts["cold"] != 10 {
		t.Fatalf("%d tasks, %d warm, summary %v: want 10 tasks, some warm", len(sum.Tasks), warm, sum.Starts)
	}
	t.Logf("%d of 10 tasks started warm", warm)
	if b, _ := os.ReadFile(filepath.Join(out, "results.jsonl")); strings.Count(string(b), `"sandbox_start":"warm"`) != warm {
		t.Errorf("results.jsonl does not carry the starts:\n%s", b)
	}
}

// run and mcp with --pool 0 start on a warm pod of another agentbox
// process's pool of their shape (the same policy), and say so in their
// header.
func TestK8sPoolRunMCP(t *testing.T) {
	env := k8sEnv(t)
	cs := k8sClient(t)
	pol := halfCPUPolicy(t)
	// Interrupted at the end, the keeper removes its session's pod, its
	// idle pods and its pool's ConfigMap (killed, it would leave them to gc).
	keeper := startInterruptible(t, env, "exec", "--policy", pol, "--pool", "2", "--timeout", "5m", "--workspace", t.TempDir(), "--", "sleep 280")
	full := func() {
		t.Helper()
		testutil.Eventually(t, 3*time.Minute, "the keeper's pool to have 2 Ready idle pods", func() bool {
			return k8sIdlePoolPods(t, cs, keeper.Process.Pid) >= 2
		})
	}
	dir := t.TempDir()
	script := writeFile(t, filepath.Join(dir, "s.yaml"), "turns:\n  - tool_calls: [{name: execute_bash, args: {command: \"echo from-a-warm-pod\"}}]\n  - content: done\n", 0o644)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) (stderr, answer string)
	}{
		{"run", func(t *testing.T) (string, string) {
			r := abCmd{fullEnv: env}.run(t, "run", "--no-memory", "--policy", pol, "--pool", "0", "--workspace", t.TempDir(), "--script", script, "say hi")
			if r.code != 0 {
				t.Fatalf("run: %d %s", r.code, r.stderr)
			}
			return r.stderr, r.stdout + r.stderr
		}},
		{"mcp", func(t *testing.T) (string, string) {
			return mcpCall(t, env, "echo from-a-warm-pod", "mcp", "--policy", pol, "--pool", "0", "--workspace", t.TempDir())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full()
			stderr, answer := tc.run(t)
			if warmRe.FindStringSubmatch(stderr) == nil || strings.Contains(stderr, "cold start") {
				t.Fatalf("%s did not start on a warm pod:\n%s", tc.name, stderr)
			}
			if !strings.Contains(answer, "from-a-warm-pod") {
				t.Fatalf("%s: the command's output is missing: %q", tc.name, answer)
			}
		})
	}
}
