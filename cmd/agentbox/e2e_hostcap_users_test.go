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
	if os.Geteuid() != 0 {
		t.Skip("running a second user's session needs root")
	}
	const other = 65534
	groups := []uint32{}
	if sock := engineSocket(); sock != "" {
		var st syscall.Stat_t
		if err := syscall.Stat(sock, &st); err != nil {
			t.Fatalf("the engine's socket %s: %v", sock, err)
		}
		groups = append(groups, st.Gid)
	}
	// A directory both users reach: t.TempDir's parents are root's only.
	top, err := os.MkdirTemp("", "agentbox-two-users-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(top) })
	slots := filepath.Join(top, "run")
	for _, d := range []string{top, slots} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(slots, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	// The test's binary may sit in a directory only root reaches.
	bin, err := os.ReadFile(testutil.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	theirBin := filepath.Join(top, "agentbox")
	if err := os.WriteFile(theirBin, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(top, "other")
	for _, d := range []string{theirs, filepath.Join(theirs, "ws")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, other, other); err != nil {
			t.Fatal(err)
		}
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

	b := exec.Command(theirBin, "exec", "--workspace", filepath.Join(theirs, "ws"), "--audit", filepath.Join(theirs, "b.jsonl"), "--", "echo b-ran")
	b.Dir = theirs
	b.Env = append([]string{"HOME=" + theirs, "XDG_STATE_HOME=" + filepath.Join(theirs, "state"), "PATH=" + os.Getenv("PATH"), "NO_COLOR=1",
		"AGENTBOX_MANIFEST_DIR=" + filepath.Join(theirs, "manifests")}, capEnv...)
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		b.Env = append(b.Env, "DOCKER_HOST="+h)
	}
	b.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: other, Gid: other, Groups: groups}}
	bOut, bErr := &testutil.LockedBuffer{}, &testutil.LockedBuffer{}
	b.Stdout, b.Stderr = bOut, bErr
	b.WaitDelay = 10 * time.Second
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

// engineSocket is the path of the Docker engine's unix socket ("" when
// DOCKER_HOST names another transport).
func engineSocket() string {
	h := os.Getenv("DOCKER_HOST")
	if h == "" {
		return "/var/run/docker.sock"
	}
	if p, ok := strings.CutPrefix(h, "unix://"); ok {
		return p
	}
	return ""
}
