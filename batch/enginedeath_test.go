package batch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox/docker"
)

// TestEngineStoppedMidBatch stops a private dockerd while a batch runs on
// it and starts it again: the task whose sandbox died and the ones that
// could not get one are infra_failed, the batch pauses with a visible line
// instead of burning through the list, resumes when the engine answers,
// and the rest succeed; nothing is left on the engine.
// The docker backend removes, once the engine is back, what it could
// not remove while it was away.
var _ sweeper = (*docker.Runtime)(nil)

func TestEngineStoppedMidBatch(t *testing.T) {
	testutil.RequireDocker(t)
	testutil.RequirePrivateEngine(t)
	dir, err := os.MkdirTemp("", "abB")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	e := &testutil.PrivateEngine{Dir: dir, Host: "unix://" + filepath.Join(dir, "docker.sock")}
	cli := e.Start(t)
	t.Cleanup(e.Stop)
	e.LoadImage(t)

	src := t.TempDir()
	writeFile(t, filepath.Join(src, "in.txt"), "in\n")
	var tasks []Task
	for i := range 8 {
		tasks = append(tasks, Task{ID: fmt.Sprintf("t%d", i), Task: "t", Workspace: src, Script: script(bash("sleep 2; echo ok > o.txt"), answer("ok"))})
	}
	cfg, _, _ := testConfig(t, tasks)
	rt := docker.New(cli)
	t.Cleanup(func() { _ = rt.CloseAll(context.Background()) })
	out := &testutil.LockedBuffer{}
	cfg.Runtime, cfg.Concurrency, cfg.NoPool, cfg.Progress = rt, 1, true, out
	cfg.InfraRetries, cfg.InfraFailures, cfg.InfraPause = 1, 2, 3*time.Minute
	// The private engine has its own mount namespace: it sees neither the
	// host's overlay upper layers nor disk images mounted after it started.
	cfg.NoOverlay, cfg.DiskInSandbox = true, "not bounded in this test"
	done := make(chan struct{})
	var sum Summary
	go func() { defer close(done); sum, err = Run(context.Background(), cfg) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("progress:\n%s", out.String())
		}
	})
	waitFor(t, "two tasks to finish", func() bool { return strings.Count(out.String(), ": ok (exit 0)") >= 2 })
	e.Stop()
	waitFor(t, "the batch to pause", func() bool { return strings.Contains(out.String(), "pausing the batch") })
	e.Start(t)
	<-done
	if err != nil {
		t.Fatalf("batch: %v", err)
	}
	if !strings.Contains(out.String(), "the engine answers again") {
		t.Errorf("no line saying the batch resumed")
	}
	infra := sum.ByStatus[StatusInfraFailed]
	if infra < 1 || infra > 3 || sum.OK != 8-infra || sum.ByStatus[StatusSetupFailed] != 0 {
		t.Errorf("by status %v: want 1 to 3 infra_failed (the running task and the ones before the pause), the rest ok", sum.ByStatus)
	}
	if left, _ := docker.ListSandboxes(context.Background(), cli, ""); len(left) != 0 {
		t.Errorf("left on the engine: %v", left)
	}
}
