package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// mountKernelOverlay mounts a kernel overlay of lower and upper (as the engine
// does for a sandbox) and returns the merged directory; it is unmounted
// at the end of the test. Needs root.
func mountKernelOverlay(t *testing.T, lower, upper string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting an overlay needs root")
	}
	base := t.TempDir()
	work, merged := filepath.Join(base, "work"), filepath.Join(base, "merged")
	for _, d := range []string{work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work + ",userxattr,redirect_dir=nofollow,metacopy=off,index=off"
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Skipf("no kernel overlay here: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(merged, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", merged, err)
		}
	})
	return merged
}

func sh(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

func readOr(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// Changes made through a real overlay (files, directories, renames,
// deletions, opaque directories) are promoted exactly, held ones never
// reach the workspace, and the sandbox's view afterwards is the
// workspace's plus nothing held.
func TestPromoteThroughKernelOverlay(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{
		"a.txt": "a", "mv-from.txt": "m", "rmdir/x": "x", "rmdir/y/z": "z", "opq/old": "o", "keep.txt": "k",
	})
	merged := mountKernelOverlay(t, lower, upper)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, merged, `
echo edited > a.txt
mv mv-from.txt mv-to.txt
rm -rf rmdir
rm -rf opq && mkdir opq && echo new > opq/new
mkdir -p d/e && echo f > d/e/f
mkdir src && echo 'ref: refs/heads/main' > src/HEAD && mkdir src/objects src/refs
printf '[core]\n\tfsmonitor = touch /tmp/agentbox-marker\n' > src/config
echo 'echo pwned' > .envrc
`)
	cp := mustPromote(t, s, "call-1")
	held := heldRules(cp)
	for _, p := range []string{"src/HEAD", "src/objects", "src/refs", "src/config", ".envrc"} {
		if held[p] == "" || exists(filepath.Join(lower, p)) {
			t.Errorf("%s: held %q, in the workspace %v", p, held[p], exists(filepath.Join(lower, p)))
		}
	}
	want := map[string]string{"a.txt": "edited\n", "mv-to.txt": "m", "opq/new": "new\n", "d/e/f": "f\n", "keep.txt": "k"}
	for p, c := range want {
		if got := readOr(filepath.Join(lower, p)); got != c {
			t.Errorf("workspace %s = %q, want %q", p, got, c)
		}
		if got := readOr(filepath.Join(merged, p)); got != c {
			t.Errorf("sandbox view %s = %q, want %q", p, got, c)
		}
	}
	for _, p := range []string{"mv-from.txt", "rmdir", "opq/old"} {
		if exists(filepath.Join(lower, p)) {
			t.Errorf("%s still in the workspace", p)
		}
		if exists(filepath.Join(merged, p)) {
			t.Errorf("%s back in the sandbox's view", p)
		}
	}
	// The sandbox's view of held entries: the listing no longer has them.
	ents, err := os.ReadDir(filepath.Join(merged, "src"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("the sandbox still lists held entries in src: %v", ents)
	}
	for _, p := range []string{"src/config", ".envrc"} {
		t.Logf("lookup of held %s in the view: exists=%v", p, exists(filepath.Join(merged, p)))
	}
	// Work goes on: the next call's changes are promoted on top.
	sh(t, merged, `echo again > a.txt && echo more > d/e/g && rm keep.txt`)
	cp = mustPromote(t, s, "call-2")
	if len(cp.Promoted()) != 3 || readOr(filepath.Join(lower, "a.txt")) != "again\n" || exists(filepath.Join(lower, "keep.txt")) {
		t.Fatalf("second call: %+v", cp.Changes)
	}
}

// overlayStage makes a workspace of files and its staging layer, mounts
// them under a real kernel overlay and opens the stage (no policy): the
// workspace, the upper directory, the sandbox's view and the stage.
func overlayStage(t *testing.T, files map[string]string) (lower, upper, merged string, s *Stage) {
	t.Helper()
	lower, upper, state := stageDirs(t, files)
	merged = mountKernelOverlay(t, lower, upper)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	return lower, upper, merged, s
}
