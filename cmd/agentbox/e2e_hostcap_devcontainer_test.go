package main_test

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types/image"
)

// TestDevcontainerBuildSharesHostCap: a devcontainer's image build (the
// engine runs its steps in containers) takes a slot of the host-wide cap.
// Under a cap of 1 held by an exec, exec --devcontainer says once that it
// waits and builds nothing until the slot is freed; then it builds and
// runs.
func TestDevcontainerBuildSharesHostCap(t *testing.T) {
	cli := testutil.RequireDocker(t)
	env := append(baseEnv(t), "AGENTBOX_MAX_SANDBOXES=1")
	ws := t.TempDir()
	// A step no other test builds: the build is never a cached one.
	writeFile(t, filepath.Join(ws, ".devcontainer", "Dockerfile"), "FROM agentbox/base:latest\nRUN echo "+sandbox.NewID()+" > /etc/devc-marker\n", 0o644)
	writeFile(t, filepath.Join(ws, ".devcontainer", "devcontainer.json"), `{"build": {"dockerfile": "Dockerfile"}}`, 0o644)
	pol := writeFile(t, filepath.Join(t.TempDir(), "policy.yaml"), "version: 1\nextends: none\ncommands:\n  default: allow\n  dynamic: allow\n", 0o644)

	hold := exec.Command(testutil.Binary(t), "exec", "--workspace", t.TempDir(), "--audit", filepath.Join(t.TempDir(), "hold.jsonl"), "--", "echo started; sleep 60")
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

	dcLog := filepath.Join(t.TempDir(), "dc.jsonl")
	dc := exec.Command(testutil.Binary(t), "exec", "--devcontainer", "--workspace", ws, "--policy", pol, "--audit", dcLog, "--", "echo ran")
	dc.Env = env
	dcOut, dcErr := &testutil.LockedBuffer{}, &testutil.LockedBuffer{}
	dc.Stdout, dc.Stderr = dcOut, dcErr
	dc.WaitDelay = 10 * time.Second
	if err := dc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dc.Process.Kill(); _ = dc.Wait() })
	testutil.Eventually(t, time.Minute, "exec --devcontainer to wait for the slot", func() bool {
		return strings.Contains(dcErr.String(), "waiting for a sandbox slot")
	})
	if strings.Contains(dcErr.String(), "building the devcontainer") {
		t.Fatalf("the devcontainer was built while the only slot was held:\n%s", dcErr.String())
	}

	_ = hold.Process.Signal(syscall.SIGTERM)
	_ = testutil.WaitCmd(t, hold, 2*time.Minute, "the holding exec after SIGTERM")
	if err := testutil.WaitCmd(t, dc, 5*time.Minute, "exec --devcontainer after the slot was freed"); err != nil || strings.TrimSpace(dcOut.String()) != "ran" {
		t.Fatalf("exec --devcontainer after the slot was freed: %v %q\n%s", err, dcOut.String(), dcErr.String())
	}
	for _, l := range readAuditLog(t, dcLog) {
		if img := l.rec.Image; l.rec.Event == "session_start" && strings.HasPrefix(img, "agentbox-devcontainer:") {
			t.Cleanup(func() { _, _ = cli.ImageRemove(context.Background(), img, image.RemoveOptions{}) }) // this test's own image
		}
	}
	if n := strings.Count(dcErr.String(), "waiting for a sandbox slot"); n != 1 || !strings.Contains(dcErr.String(), "building the devcontainer") {
		t.Errorf("exec --devcontainer says it waits %d times (want once) or built nothing:\n%s", n, dcErr.String())
	}
}
