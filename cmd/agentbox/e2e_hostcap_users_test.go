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

// TestHostCapTwoUsers: two users share one host-wide cap. Under a cap of
// 1 in a shared (sticky, world-writable) slot directory, as /run/agentbox
// is, root's exec holds the slot; another user's exec (uid 65534, in the
// engine socket's group) waits for it, says so once with its place in the
// host's queue, runs nothing meanwhile, and runs once root's is gone.
func TestHostCapTwoUsers(t *testing.T) {
	testutil.RequireDocker(t)
	u := newOtherUser(t)
	slots := filepath.Join(u.top, "run")
	if err := os.Mkdir(slots, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(slots, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	capEnv := []string{"AGENTBOX_MAX_SANDBOXES=1", "AGENTBOX_RUNTIME_DIR=" + slots}

	a := exec.Command(testutil.Binary(t), "exec", "--workspace", t.TempDir(), "--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--", "echo started; sleep 60")
	a.Env = append(baseEnv(t), capEnv...)
	aOut, _ := a.StdoutPipe()
	a.WaitDelay = 10 * time.Second // a child holding its output cannot hang Wait
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Process.Kill(); _ = a.Wait() })
	if line, _ := bufio.NewReader(aOut).ReadString('\n'); strings.TrimSpace(line) != "started" {
		t.Fatalf("root's exec did not start: %q", line)
	}

	b := u.command(capEnv, "exec", "--workspace", filepath.Join(u.home, "ws"), "--audit", filepath.Join(u.home, "b.jsonl"), "--", "echo b-ran")
	bOut, bErr := &testutil.LockedBuffer{}, &testutil.LockedBuffer{}
	b.Stdout, b.Stderr = bOut, bErr
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Process.Kill(); _ = b.Wait() })

	testutil.Eventually(t, time.Minute, "the other user's exec to wait for the slot", func() bool {
		return strings.Contains(bErr.String(), "waiting for a sandbox slot")
	})
	if n := strings.Count(bErr.String(), "waiting for a sandbox slot"); n != 1 || !strings.Contains(bErr.String(), "in the host's queue") {
		t.Fatalf("the other user's exec says it waits %d times (want once, with its place in the queue):\n%s", n, bErr.String())
	}
	if bOut.String() != "" {
		t.Fatalf("the other user's exec ran while root's held the only slot: %q", bOut.String())
	}

	_ = a.Process.Signal(syscall.SIGTERM)
	_ = testutil.WaitCmd(t, a, 2*time.Minute, "root's exec after SIGTERM")
	if err := testutil.WaitCmd(t, b, 2*time.Minute, "the other user's exec after the slot was freed"); err != nil || strings.TrimSpace(bOut.String()) != "b-ran" {
		t.Fatalf("the other user's exec after the slot was freed: %v %q\n%s", err, bOut.String(), bErr.String())
	}
}
