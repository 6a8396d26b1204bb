package batch

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// benchTasks is the size of each benchmarked batch: small enough that a
// whole benchmark stays under a minute on a 2-core machine.
const benchTasks = 12

// BenchmarkBatch measures the throughput of short scripted tasks (one
// bash call that writes a file, then an answer) at concurrency 1, 2 and 4,
// with and without the warm pool. Each op is one batch of benchTasks
// tasks; tasks/min and ms/task (wall time per task) are reported. At c=1
// ms/task is the per-task overhead to set against BenchmarkDockerRunRm.
func BenchmarkBatch(b *testing.B) {
	src := b.TempDir()
	writeFile(b, filepath.Join(src, "in.txt"), "in\n")
	for _, c := range []int{1, 2, 4} {
		for _, pool := range []bool{true, false} {
			name := fmt.Sprintf("c=%d/pool", c)
			if !pool {
				name = fmt.Sprintf("c=%d/no-pool", c)
			}
			b.Run(name, func(b *testing.B) {
				var tasks []Task
				for i := range benchTasks {
					tasks = append(tasks, Task{ID: fmt.Sprintf("t%02d", i), Task: "write a file", Workspace: src,
						Script: script(bash("echo done > out.txt"), answer("done"))})
				}
				cfg, _, _ := testConfig(b, tasks)
				cfg.Concurrency, cfg.NoPool = c, !pool
				total := runBatches(b, cfg)
				n := float64(b.N * benchTasks)
				b.ReportMetric(n/total.Minutes(), "tasks/min")
				b.ReportMetric(float64(total.Milliseconds())/n, "ms/task")
			})
		}
	}
}

// BenchmarkBatchCapped is BenchmarkBatch (warm pool) under the host-wide
// sandbox cap at its default (the number of CPUs; a private slot
// directory, so other processes do not share it): what the slot files,
// the round-robin queue and the CPU weight cost, and what -j above the
// cap buys (c=4 on a 2-core machine queues for slots).
func BenchmarkBatchCapped(b *testing.B) {
	src := b.TempDir()
	writeFile(b, filepath.Join(src, "in.txt"), "in\n")
	for _, c := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("c=%d/cap=%d", c, runtime.NumCPU()), func(b *testing.B) {
			var tasks []Task
			for i := range benchTasks {
				tasks = append(tasks, Task{ID: fmt.Sprintf("t%02d", i), Task: "write a file", Workspace: src,
					Script: script(bash("echo done > out.txt"), answer("done"))})
			}
			cfg, _, _ := testConfig(b, tasks)
			cfg.Concurrency, cfg.MaxSandboxes, cfg.SlotDir = c, runtime.NumCPU(), b.TempDir()
			total := runBatches(b, cfg)
			n := float64(b.N * benchTasks)
			b.ReportMetric(n/total.Minutes(), "tasks/min")
			b.ReportMetric(float64(total.Milliseconds())/n, "ms/task")
		})
	}
}

// BenchmarkDockerRunRm is the baseline: one bare `docker run --rm` of the
// sandbox image per task, no agent, no policy, no audit.
func BenchmarkDockerRunRm(b *testing.B) {
	testutil.RequireDocker(b)
	docker, err := exec.LookPath("docker")
	if err != nil {
		b.Skip("no docker CLI for the baseline")
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if out, err := exec.Command(docker, "run", "--rm", "--network", "none", testutil.Image, "true").CombinedOutput(); err != nil {
			b.Fatalf("docker run: %v: %s", err, out)
		}
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/task")
}

// runBatches runs cfg's batch b.N times, each into its own output
// directory, and returns the wall time of the runs; any failed task fails
// the benchmark.
func runBatches(b *testing.B, cfg Config) time.Duration {
	out := cfg.Output
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		cfg.Output = fmt.Sprintf("%s-%d", out, i)
		start := time.Now()
		sum, err := Run(context.Background(), cfg)
		total += time.Since(start)
		if err != nil || !sum.AllOK() {
			b.Fatalf("batch: %v %+v", err, sum)
		}
	}
	return total
}
