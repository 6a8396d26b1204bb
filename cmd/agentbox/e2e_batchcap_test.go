package main_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestBatchHostCap: two batches at -j 3 each under a host-wide cap of 2
// never run more than 2 sandboxes at once (sampled from the engine), say
// when they wait for a slot, and both progress: the slots are shared
// between them while both have tasks left.
func TestBatchHostCap(t *testing.T) {
	cli := testutil.RequireDocker(t)
	env := append(baseEnv(t), "AGENTBOX_MAX_SANDBOXES=2", "AGENTBOX_RUNTIME_DIR="+t.TempDir())
	type run struct {
		cmd  *exec.Cmd
		errb bytes.Buffer
	}
	start := func() *run {
		tasks := batchFixture(t, 5, 0, "sleep 1; echo slow > out.txt")
		r := &run{cmd: exec.Command(testutil.Binary(t), "batch", tasks, "-j", "3", "--output", filepath.Join(t.TempDir(), "out"),
			"--audit", filepath.Join(t.TempDir(), "audit.jsonl"))}
		r.cmd.Env = env
		r.cmd.Stderr = &r.errb
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.cmd.Process.Kill(); _ = r.cmd.Wait() })
		return r
	}
	a, b := start(), start()
	var mu sync.Mutex
	most, both := 0, false
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			na, err1 := testutil.OwnedBy(context.Background(), cli, a.cmd.Process.Pid)
			nb, err2 := testutil.OwnedBy(context.Background(), cli, b.cmd.Process.Pid)
			if err1 != nil || err2 != nil {
				continue
			}
			mu.Lock()
			most = max(most, len(na)+len(nb))
			both = both || (len(na) > 0 && len(nb) > 0)
			mu.Unlock()
		}
	}()
	errA, errB := a.cmd.Wait(), b.cmd.Wait()
	close(stop)
	<-sampled
	if errA != nil || errB != nil {
		t.Fatalf("batches: %v %v\n%s\n%s", errA, errB, a.errb.String(), b.errb.String())
	}
	if most > 2 {
		t.Errorf("%d sandboxes ran at once under a cap of 2", most)
	}
	if most == 0 || !both {
		t.Errorf("the batches did not share the slots (most %d at once, both at once: %v)", most, both)
	}
	if !strings.Contains(a.errb.String()+b.errb.String(), "waiting for a sandbox slot") {
		t.Errorf("no batch said it waited for a slot:\n%s\n%s", a.errb.String(), b.errb.String())
	}
	for _, e := range []string{a.errb.String(), b.errb.String()} {
		if n := strings.Count(e, "waiting for a sandbox slot"); n > 1 {
			t.Errorf("a batch said %d times that it waits (once per batch, with its place in the queue):\n%s", n, e)
		}
		if strings.Contains(e, "waiting for a sandbox slot") && !strings.Contains(e, "in the host's queue") {
			t.Errorf("the waiting line does not say where the batch is in the queue:\n%s", e)
		}
	}
}
