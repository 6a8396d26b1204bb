package batch

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/kubernetes"
)

// benchPoolSize is the Kubernetes row's warm pool (idle pods kept) and the
// tasks both rows prepare ahead.
const benchPoolSize = 2

// BenchmarkBatchBackends: a 20-task batch (one bash call writing a file,
// then an answer) at concurrency 4 on Docker and, beside it in the same
// run, as pods on the Kubernetes test cluster with a warm pool of
// benchPoolSize idle pods, full before the clock starts (real workspace
// copies sent in and changes brought back). Both rows run the default
// policy with a quarter CPU per sandbox: on Kubernetes a pod requests what
// it is limited to, and the running, prepared and idle pods (at most 8)
// then fit the 2-core test node. warm/task is the share of the Kubernetes
// tasks that started on a claimed idle pod. Skipped without a cluster.
func BenchmarkBatchBackends(b *testing.B) {
	const n = 20
	src := b.TempDir()
	writeFile(b, filepath.Join(src, "in.txt"), "in\n")
	polFile := filepath.Join(b.TempDir(), "quarter-cpu.yaml")
	writeFile(b, polFile, "version: 1\nsandbox:\n  limits: {cpus: 0.25}\n")
	pol, err := policy.Load(polFile) // a file: the executor reads it again
	if err != nil {
		b.Fatal(err)
	}
	for _, backend := range []string{"docker", "kubernetes"} {
		b.Run(backend, func(b *testing.B) {
			var tasks []Task
			for i := range n {
				tasks = append(tasks, Task{ID: fmt.Sprintf("t%02d", i), Task: "write a file", Workspace: src,
					Script: script(bash("echo done > out.txt"), answer("done"))})
			}
			cfg, _, _ := testConfig(b, tasks)
			cfg.Concurrency, cfg.PoolSize, cfg.Policy = 4, benchPoolSize, pol
			if backend == "kubernetes" {
				cfg.Runtime = benchPoolRuntime(b, pol, tasks[0]) // its capabilities: a real copy, bounded in the pod
				cfg.Sandbox = Overrides{Image: kubernetes.DefaultImage}
			}
			total := runBatches(b, cfg)
			b.ReportMetric(float64(b.N*n)/total.Minutes(), "tasks/min")
			if backend == "kubernetes" {
				warm := 0
				for i := range b.N {
					for _, l := range readLines(b, filepath.Join(fmt.Sprintf("%s-%d", cfg.Output, i), resultsName)) {
						if l.SandboxStart == sandbox.StartWarm {
							warm++
						}
					}
				}
				b.ReportMetric(float64(warm)/float64(b.N*n), "warm/task")
			}
		})
	}
}

// benchPoolRuntime connects to the test cluster with a warm pool of
// benchPoolSize pods and waits until the pool of t's shape is full.
func benchPoolRuntime(b *testing.B, pol *policy.Policy, t Task) *kubernetes.Runtime {
	b.Setenv("KUBECONFIG", testutil.Kubeconfig(b))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rt, err := kubernetes.Connect(ctx, kubernetes.Options{UsePool: true, Pool: benchPoolSize})
	if err != nil {
		b.Fatalf("connecting to the test cluster: %v", err)
	}
	b.Cleanup(func() { _ = rt.Close(context.Background()) })
	sc, _, err := TaskSandbox(pol, Overrides{Image: kubernetes.DefaultImage}, &t)
	if err != nil {
		b.Fatal(err)
	}
	sc.WorkspaceCopy = true // as the batch's session gives it: a copy sent in
	rt.Warm(ctx, sc)
	for {
		idle, err := rt.PoolIdle(ctx, sc)
		if err != nil {
			b.Fatalf("the warm pool: %v", err)
		}
		if idle >= benchPoolSize {
			return rt
		}
		select {
		case <-ctx.Done():
			b.Fatalf("the warm pool did not reach %d Ready idle pods in 4 minutes", benchPoolSize)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
