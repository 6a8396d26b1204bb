package batch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"golang.org/x/sys/unix"
)

// deadOwnerLabels are owner labels of a process that ran on this kernel,
// in this PID namespace, and is gone.
func deadOwnerLabels(t *testing.T) map[string]string {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	l := sandbox.OwnerLabels()
	l[sandbox.LabelOwner] = strconv.Itoa(cmd.Process.Pid) + ":1"
	if sandbox.JudgeOwner(l) != sandbox.OwnerDead {
		t.Skip("cannot make the labels of a dead owner here (no /proc?)")
	}
	return l
}

func makeWork(t *testing.T, root, id string, labels map[string]string) string {
	t.Helper()
	dir := filepath.Join(root, id)
	writeFile(t, filepath.Join(dir, "0123456789abcdef", "tree", "f"), "copy")
	if err := writeSynced(filepath.Join(dir, ownerFile), workOwner{Batch: id, Created: time.Now(), Labels: labels}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGCWorkRemovesOnlyDeadOwners: a dead batch's work directory goes,
// mounts below it included (root only); a live batch's stays whole, and
// so does a fresh directory whose owner is not recorded yet.
func TestGCWorkRemovesOnlyDeadOwners(t *testing.T) {
	root := t.TempDir()
	dead := makeWork(t, root, "aaaaaaaaaaaaaaaa", deadOwnerLabels(t))
	live := makeWork(t, root, "bbbbbbbbbbbbbbbb", sandbox.OwnerLabels())
	fresh := filepath.Join(root, "cccccccccccccccc")
	writeFile(t, filepath.Join(fresh, "x"), "creating")
	mnt := filepath.Join(dead, "0123456789abcdef", "disk")
	mounted := false
	if os.Geteuid() == 0 {
		if err := os.Mkdir(mnt, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
			t.Logf("no tmpfs mount here: %v", err)
		} else {
			mounted = true
			t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
			writeFile(t, filepath.Join(mnt, "upper"), "on the image")
		}
	}
	removed, err := GCWork(root, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != dead {
		t.Fatalf("removed %v, want only %s", removed, dead)
	}
	if _, err := os.Lstat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead batch's work directory is still there: %v", err)
	}
	if mounted {
		mi, _ := os.ReadFile("/proc/self/mountinfo")
		if strings.Contains(string(mi), mnt) {
			t.Errorf("the mount below the dead batch's directory is still there")
		}
	}
	for _, keep := range []string{filepath.Join(live, "0123456789abcdef", "tree", "f"), filepath.Join(fresh, "x")} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("gc touched a live batch: %v", err)
		}
	}
	// An owner file never written: removed only once old.
	old := time.Now().Add(-2 * unownedAge)
	if err := os.Chtimes(fresh, old, old); err != nil {
		t.Fatal(err)
	}
	if removed, _ := GCWork(root, time.Now()); len(removed) != 1 || removed[0] != fresh {
		t.Errorf("an old directory without an owner: removed %v", removed)
	}
}
