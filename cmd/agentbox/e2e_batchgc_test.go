package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// batchTraces is what one batch process owns: containers, volumes, its
// work directory (copies, disk images) and the mounts below it.
type batchTraces struct {
	containers, volumes, mounts int
	work                        string // "" when gone
	copies                      int
}

// tracesOf counts what the batch process pid owns on the engine and host.
func tracesOf(t *testing.T, cli *client.Client, state string, pid int) batchTraces {
	t.Helper()
	var tr batchTraces
	ids, err := testutil.OwnedBy(context.Background(), cli, pid)
	if err != nil {
		t.Fatal(err)
	}
	tr.containers = len(ids)
	vols, err := cli.VolumeList(context.Background(), volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelSession))})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vols.Volumes {
		if p, _, _ := strings.Cut(v.Labels[sandbox.LabelOwner], ":"); p == strconv.Itoa(pid) {
			tr.volumes++
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(state, "agentbox", "work", "batch", "*", "owner.json"))
	for _, f := range dirs {
		b, _ := os.ReadFile(f)
		var own struct{ Labels map[string]string }
		if json.Unmarshal(b, &own) == nil && strings.HasPrefix(own.Labels[sandbox.LabelOwner], strconv.Itoa(pid)+":") {
			tr.work = filepath.Dir(f)
		}
	}
	if tr.work == "" {
		return tr
	}
	ents, _ := os.ReadDir(tr.work)
	for _, e := range ents {
		if e.IsDir() {
			tr.copies++
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], tr.work+"/") {
			tr.mounts++
		}
	}
	return tr
}

// startSlowBatch starts a batch of tasks that each sleep in their sandbox,
// sharing state (the work root) through env.
func startSlowBatch(t *testing.T, env []string) *exec.Cmd {
	t.Helper()
	tasks := batchFixture(t, 4, 0, "echo started > started.txt; sleep 300")
	cmd := exec.Command(testutil.Binary(t), "batch", tasks, "-j", "2", "--output", filepath.Join(t.TempDir(), "out"),
		"--audit", filepath.Join(t.TempDir(), "audit.jsonl"))
	cmd.Env = env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("batch %d stderr:\n%s", cmd.Process.Pid, errb.String())
		}
	})
	return cmd
}

// TestBatchKill9ThenGC: a batch killed with SIGKILL mid-run leaves
// containers, overlay volumes, workspace copies and (as root) loop-mounted
// disk images; `agentbox gc` removes every one of them, and nothing of a
// second, live batch.
func TestBatchKill9ThenGC(t *testing.T) {
	cli := testutil.RequireDocker(t)
	env := append(baseEnv(t), "AGENTBOX_MAX_SANDBOXES=8", "AGENTBOX_RUNTIME_DIR="+t.TempDir()) // two batches, two sandboxes each
	state := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "XDG_STATE_HOME="); ok {
			state = v
		}
	}
	killed := startSlowBatch(t, env)
	live := startSlowBatch(t, env)
	running := func(pid int) func() bool {
		return func() bool {
			tr := tracesOf(t, cli, state, pid)
			return tr.containers >= 2 && tr.copies >= 2
		}
	}
	testutil.Eventually(t, 2*time.Minute, "both batches to run two tasks", func() bool {
		return running(killed.Process.Pid)() && running(live.Process.Pid)()
	})
	liveBefore := tracesOf(t, cli, state, live.Process.Pid)
	before := tracesOf(t, cli, state, killed.Process.Pid)
	t.Logf("killed batch before gc: %+v; live batch: %+v", before, liveBefore)
	if os.Geteuid() == 0 && before.mounts == 0 {
		t.Logf("no disk image mounted under the copies (no mkfs.ext4?)")
	}
	_ = killed.Process.Kill()
	_ = killed.Wait()
	pid := killed.Process.Pid

	testutil.Eventually(t, time.Minute, "gc to remove everything of the killed batch", func() bool {
		if r := batchRunEnv(t, env, "gc"); r.code != 0 {
			t.Fatalf("gc: %d %s %s", r.code, r.stdout, r.stderr)
		}
		return tracesOf(t, cli, state, pid) == batchTraces{}
	})
	if liveAfter := tracesOf(t, cli, state, live.Process.Pid); liveAfter.containers < 2 || liveAfter.copies < liveBefore.copies ||
		liveAfter.mounts < liveBefore.mounts || liveAfter.volumes < liveBefore.volumes || liveAfter.work != liveBefore.work {
		t.Errorf("gc touched the live batch: before %+v after %+v", liveBefore, liveAfter)
	}
	// The live batch still works: interrupted, it removes all it owns.
	_ = live.Process.Signal(syscall.SIGINT)
	_ = live.Wait()
	if tr := tracesOf(t, cli, state, live.Process.Pid); tr != (batchTraces{}) {
		t.Errorf("the interrupted live batch left %+v", tr)
	}
}
