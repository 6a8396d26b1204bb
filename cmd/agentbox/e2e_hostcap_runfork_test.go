package main_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestRunAndForkShareHostCap: run and fork take a slot of the host-wide
// cap as exec does. Under a cap of 1 held by an exec, a run and a fork of
// an earlier session each say once that they wait, with their place in
// the host's queue, write nothing meanwhile, and finish once the slot is
// freed.
func TestRunAndForkShareHostCap(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	env := append(baseEnv(t), "AGENTBOX_MAX_SANDBOXES=1")
	ab := abCmd{fullEnv: env}
	ws := filepath.Join(dir, "ws")
	writeFile(t, filepath.Join(ws, "a.txt"), "v0\n", 0o644)
	write := func(name, file string) string {
		return writeFile(t, filepath.Join(dir, name), "turns:\n  - tool_calls: [{name: write_file, args: {path: "+file+", content: \"x\\n\"}}]\n  - content: done\n", 0o644)
	}
	log := filepath.Join(dir, "audit.jsonl")
	first := ab.run(t, "run", "--no-memory", "--workspace", ws, "--audit", log, "--script", write("first.yaml", "a.txt"), "edit a.txt")
	if first.code != 0 {
		t.Fatalf("run: %d\n%s", first.code, first.stderr)
	}
	sess := sessionOf(t, first.stderr)

	hold := exec.Command(testutil.Binary(t), "exec", "--workspace", t.TempDir(), "--audit", filepath.Join(dir, "hold.jsonl"), "--", "echo started; sleep 60")
	hold.Env = env
	out, _ := hold.StdoutPipe()
	hold.WaitDelay = 10 * time.Second // a child holding its output cannot hang Wait
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hold.Process.Kill(); _ = hold.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "started" {
		t.Fatalf("the exec holding the slot did not start: %q", line)
	}

	start := func(args ...string) (*exec.Cmd, *testutil.LockedBuffer) {
		cmd := exec.Command(testutil.Binary(t), args...)
		cmd.Env = env
		errb := &testutil.LockedBuffer{}
		cmd.Stdout, cmd.Stderr = errb, errb
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, errb
	}
	run, runOut := start("run", "--no-memory", "--workspace", ws, "--audit", log, "--script", write("run.yaml", "run.txt"), "write run.txt")
	forked := filepath.Join(dir, "forked")
	fork, forkOut := start("fork", "--no-memory", "--audit", log, "--script", write("fork.yaml", "fork.txt"), "--dir", forked, sess, "1", "--", "write fork.txt")
	for _, w := range []struct {
		name string
		out  *testutil.LockedBuffer
	}{{"run", runOut}, {"fork", forkOut}} {
		testutil.Eventually(t, time.Minute, w.name+" to wait for the slot", func() bool { return strings.Contains(w.out.String(), "waiting for a sandbox slot") })
	}
	if _, err := os.Lstat(filepath.Join(ws, "run.txt")); err == nil {
		t.Fatal("the run wrote run.txt while the only slot was held")
	}
	for name, o := range map[string]*testutil.LockedBuffer{"run": runOut, "fork": forkOut} {
		if strings.Contains(o.String(), "[1/") {
			t.Fatalf("%s made a call while the only slot was held:\n%s", name, o.String())
		}
	}

	_ = hold.Process.Signal(syscall.SIGTERM)
	_ = testutil.WaitCmd(t, hold, 2*time.Minute, "the holding exec after SIGTERM")
	for _, c := range []struct {
		name string
		cmd  *exec.Cmd
		out  *testutil.LockedBuffer
	}{{"run", run, runOut}, {"fork", fork, forkOut}} {
		if err := testutil.WaitCmd(t, c.cmd, 3*time.Minute, c.name+" after the slot was freed"); err != nil {
			t.Fatalf("%s after the slot was freed: %v\n%s", c.name, err, c.out.String())
		}
		if !strings.Contains(c.out.String(), "[1/30] write_file") {
			t.Errorf("%s made no call after the slot was freed:\n%s", c.name, c.out.String())
		}
		if n := strings.Count(c.out.String(), "waiting for a sandbox slot"); n != 1 || !strings.Contains(c.out.String(), "in the host's queue") || !strings.Contains(c.out.String(), "at most 1 sandbox at once") {
			t.Errorf("%s says it waits %d times (want once, with its place in the queue):\n%s", c.name, n, c.out.String())
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, "run.txt")); err != nil {
		t.Errorf("the run did not write run.txt after the slot was freed: %v", err)
	}
}
