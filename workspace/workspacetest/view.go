package workspacetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/workspace"
	"golang.org/x/sys/unix"
)

// View is the sandbox's view of a workspace plan: the directory itself,
// or, for an overlay, a kernel overlay of its layers mounted as the
// engine mounts it (needs root; the test is skipped without it). The
// returned function unmounts it (the sandbox is gone); it is also
// unmounted at the end of the test.
func View(t *testing.T, p workspace.Plan) (string, func()) {
	t.Helper()
	if p.Overlay == nil {
		return p.Dir, func() {}
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting an overlay needs root")
	}
	lower := p.Overlay.Lower
	if lower == "" {
		lower = p.Dir
	}
	merged := filepath.Join(t.TempDir(), "merged")
	if err := os.Mkdir(merged, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := "lowerdir=" + lower + ",upperdir=" + p.Overlay.Upper + ",workdir=" + p.Overlay.Work + ",userxattr,redirect_dir=nofollow,metacopy=off,index=off"
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Skipf("no kernel overlay here: %v", err)
	}
	mounted := true
	unmount := func() {
		if !mounted {
			return
		}
		mounted = false
		if err := unix.Unmount(merged, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", merged, err)
		}
	}
	t.Cleanup(unmount)
	return merged, unmount
}

// MountsUnder lists the mount points at or below dir (this process's
// mount namespace).
func MountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	out, err := workspace.MountsUnder(dir)
	if err != nil {
		t.Skipf("no mount table here: %v", err)
	}
	return out
}
