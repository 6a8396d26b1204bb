package batch

import (
	"context"
	"os"
	"testing"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
)

// TestTaskUsage: a task that burns 2 CPU-seconds and touches 200 MiB is
// accounted within 20% from its cgroup (against the same task without the
// burn, measured in the same run: the sandbox's own work, the executor
// and the shell, is the task's usage too and varies by engine and kernel);
// its calls, failed calls and denials are counted; every audit record of
// the batch carries the batch id, and the summary totals the tasks.
func TestTaskUsage(t *testing.T) {
	src := t.TempDir()
	burn := func(secs int) string {
		return `python3 -c "
import time
b = bytearray(200 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
t = time.process_time()
while time.process_time() - t < ` + string(rune('0'+secs)) + `:
    pass
"`
	}
	run := func(secs int) (Summary, *audit.Writer) {
		tasks := []Task{{ID: "burn", Task: "t", Workspace: src, Script: script(bash(burn(secs)), bash("false"), bash("sudo true"), answer("done"))}}
		cfg, w, _ := testConfig(t, tasks)
		cfg.Approver = agent.AllowAll{} // python3 runs as python3.11, which the default policy asks about at exec time
		sum, err := Run(context.Background(), cfg)
		if err != nil || len(sum.Tasks) != 1 {
			t.Fatalf("batch: %v %+v", err, sum)
		}
		return sum, w
	}
	base, _ := run(0)
	sum, w := run(2)
	_, _, cli := testConfig(t, nil)
	u := sum.Tasks[0].Usage
	t.Logf("usage %+v", u)
	if !u.Measured {
		t.Skip("the engine's cgroups are not visible from here (remote engine?)")
	}
	t.Logf("the same task without the burn: %.2f CPU-seconds", base.Tasks[0].Usage.CPUSeconds)
	if burned := u.CPUSeconds - base.Tasks[0].Usage.CPUSeconds; burned < 1.6 || burned > 2.4 {
		t.Errorf("CPU seconds %.2f, %.2f more than without the burn, want 2 ± 20%%", u.CPUSeconds, burned)
	}
	if want := float64(200 << 20); float64(u.PeakMemoryBytes) < 0.8*want || float64(u.PeakMemoryBytes) > 1.2*want {
		t.Errorf("peak memory %d MiB, want 200 MiB ± 20%%", u.PeakMemoryBytes>>20)
	}
	if u.Calls != 2 || u.FailedCalls != 1 || u.Denials != 1 || u.OOMKills != 0 {
		t.Errorf("calls %d failed %d denials %d oom %d, want 2 1 1 0", u.Calls, u.FailedCalls, u.Denials, u.OOMKills)
	}
	if sum.Usage.Calls != u.Calls || sum.Usage.CPUSeconds != u.CPUSeconds || sum.Batch == "" || sum.Tasks[0].Batch != sum.Batch {
		t.Errorf("summary usage %+v batch %q", sum.Usage, sum.Batch)
	}
	f, err := os.Open(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	_ = audit.Scan(f, func(line int, r audit.Record) error {
		n++
		if r.Batch != sum.Batch {
			t.Errorf("audit line %d (%s) has batch %q, want %q", line, r.Event, r.Batch, sum.Batch)
		}
		return nil
	})
	if n < 5 {
		t.Errorf("only %d audit records", n)
	}
	noLeftovers(t, cli)
}
