package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestSIGKILLStopsTheCommand: agentbox is SIGKILLed while a command
// appends a line every 100ms: the command stops at once (the executor
// sees its host's end of stdin close), far less than one heartbeat (2s,
// 20 lines) later. On the code before, it ran until the dead man's
// switch (three heartbeats) fired.
func TestSIGKILLStopsTheCommand(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pol, []byte("version: 1\nextends: none\ncommands:\n  default: deny\n  allow: [echo, sleep, \":\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := baseEnv(t)
	cmd := exec.Command(testutil.Binary(t), "exec", "--workspace", ws, "--policy", pol, "--", "while :; do echo x >> counter; sleep 0.1; done")
	cmd.Env = env
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); abCmd{fullEnv: env}.run(t, "gc") })
	// The file is staged in the session's upper layer (or, without
	// staging, in the workspace).
	size := func() int64 {
		paths := append(stagedPaths(env, "counter"), filepath.Join(ws, "counter"))
		for _, p := range paths {
			if fi, err := os.Stat(p); err == nil {
				return fi.Size()
			}
		}
		return 0
	}
	testutil.Eventually(t, 90*time.Second, "the command to write", func() bool { return size() >= 4 })
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	atKill := size()
	// Wait until the file stops growing (unchanged for 25 checks, 5 write intervals).
	last, stable := atKill, 0
	testutil.Eventually(t, 60*time.Second, "the command to stop", func() bool {
		if n := size(); n == last {
			stable++
		} else {
			last, stable = n, 0
		}
		return stable >= 25
	})
	if lines := (last - atKill) / 2; lines >= 20 {
		t.Errorf("the command wrote %d more lines after agentbox was killed: it ran on for about a heartbeat or more\n%s", lines, errb.String())
	}
}
