package batch

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox/kubernetes"
)

// BenchmarkBatchBackends: a 20-task batch (one bash call writing a file,
// then an answer) at concurrency 4 on Docker and, beside it in the same
// run, as pods on the Kubernetes test cluster (real workspace copies sent
// in and changes brought back). Skipped without a cluster.
func BenchmarkBatchBackends(b *testing.B) {
	const n = 20
	src := b.TempDir()
	writeFile(b, filepath.Join(src, "in.txt"), "in\n")
	for _, backend := range []string{"docker", "kubernetes"} {
		b.Run(backend, func(b *testing.B) {
			var tasks []Task
			for i := range n {
				tasks = append(tasks, Task{ID: fmt.Sprintf("t%02d", i), Task: "write a file", Workspace: src,
					Script: script(bash("echo done > out.txt"), answer("done"))})
			}
			cfg, _, _ := testConfig(b, tasks)
			cfg.Concurrency = 4
			if backend == "kubernetes" {
				b.Setenv("KUBECONFIG", testutil.Kubeconfig(b))
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				rt, err := kubernetes.Connect(ctx, kubernetes.Options{})
				cancel()
				if err != nil {
					b.Fatalf("connecting to the test cluster: %v", err)
				}
				b.Cleanup(func() { _ = rt.CloseAll(context.Background()) })
				cfg.Runtime = rt // its capabilities: a real copy, bounded in the pod
				cfg.Sandbox = Overrides{Image: kubernetes.DefaultImage}
			}
			total := runBatches(b, cfg)
			b.ReportMetric(float64(b.N*n)/total.Minutes(), "tasks/min")
		})
	}
}
