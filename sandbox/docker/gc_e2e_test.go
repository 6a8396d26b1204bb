package docker_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
)

// TestGCLeavesOtherPIDNamespacesAlone runs the real binary's `exec` in its
// own PID namespace and `agentbox gc` outside it: the sandbox survives
// while its owner lives and after it died (gc cannot prove that from
// here); gc run inside that namespace after the owner died removes it.
// (Until every branch has this gc, an older agentbox binary's gc on the
// same engine may remove the sandbox itself and fail this test.)
func TestGCLeavesOtherPIDNamespacesAlone(t *testing.T) {
	cli := testutil.RequireDocker(t)
	bin := testutil.Binary(t)
	if os.Geteuid() != 0 {
		t.Skip("unshare --pid needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	ws, dir := t.TempDir(), t.TempDir()
	flag := func(name string) string { return filepath.Join(dir, name) }
	script := `
"$BIN" exec -w "$WS" --approve allow -- sleep 120 >/dev/null 2>&1 & pid=$!
until [ -e "$DIR/go1" ]; do sleep 0.05; done
kill -9 $pid; wait $pid; touch "$DIR/killed"
until [ -e "$DIR/go2" ]; do sleep 0.05; done
"$BIN" gc > "$DIR/gc.out" 2>&1; touch "$DIR/done"
`
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "BIN="+bin, "WS="+ws, "DIR="+dir, "AGENTBOX_AUDIT="+flag("audit.jsonl"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(flag("go1"), nil, 0o644)
		_ = os.WriteFile(flag("go2"), nil, 0o644)
		_ = cmd.Wait()
	})

	// The sandbox whose workspace is ws.
	find := func() string {
		list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelSession))})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list {
			for _, m := range c.Mounts {
				if m.Source == ws {
					return c.ID
				}
				// rw stages: the workspace is the lower layer of the
				// session's overlay volume.
				if m.Type == mount.TypeVolume {
					if v, err := cli.VolumeInspect(context.Background(), m.Name); err == nil && strings.Contains(v.Options["o"], "lowerdir="+ws) {
						return c.ID
					}
				}
			}
		}
		return ""
	}
	var id string
	testutil.Eventually(t, 90*time.Second, "the namespaced agentbox's sandbox", func() bool { id = find(); return id != "" })
	gcOutside := func(when string) {
		out, err := exec.Command(bin, "gc").CombinedOutput()
		if err != nil {
			t.Fatalf("gc: %v %s", err, out)
		}
		if find() != id {
			t.Fatalf("gc outside the namespace removed the sandbox %s (%s): %s", id[:12], when, out)
		}
	}
	gcOutside("owner alive")
	_ = os.WriteFile(flag("go1"), nil, 0o644)
	testutil.Eventually(t, 30*time.Second, "the owner killed", func() bool { _, err := os.Stat(flag("killed")); return err == nil })
	gcOutside("owner dead")
	_ = os.WriteFile(flag("go2"), nil, 0o644)
	testutil.Eventually(t, 60*time.Second, "gc inside the namespace", func() bool { _, err := os.Stat(flag("done")); return err == nil })
	// Removal may still be in progress (gc reports a conflict as done).
	testutil.Eventually(t, 30*time.Second, "gc inside the namespace to remove the dead owner's sandbox", func() bool { return find() == "" })
}
