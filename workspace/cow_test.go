package workspace

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newTestCopy makes a copy of a six-change base workspace in a fresh store.
func newTestCopy(t *testing.T, o CopyOptions) (src string, store Store, cp *Copy) {
	t.Helper()
	src = filepath.Join(t.TempDir(), "ws")
	sixBase(t, src, 100)
	store = Store{Dir: filepath.Join(t.TempDir(), "state", "work")}
	if o.Session == "" {
		o.Session = "0123456789abcdef0123"
	}
	cp, err := NewCopy(store, src, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Remove() })
	return src, store, cp
}

// mountOverlay mounts the copy's overlay at a new directory, as the engine
// would, and returns it with its unmount. Root only.
func mountOverlay(t *testing.T, cp *Copy) (string, func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting an overlay needs root")
	}
	merged := filepath.Join(t.TempDir(), "merged")
	_ = os.Mkdir(merged, 0o755)
	opts := "lowerdir=" + cp.Workspace + ",upperdir=" + cp.Upper() + ",workdir=" + cp.OverlayWork() + ",userxattr,redirect_dir=nofollow,metacopy=off,index=off"
	if err := unix.Mount("overlay", merged, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		t.Fatalf("mount overlay: %v", err)
	}
	done := false
	un := func() {
		if !done {
			done = true
			_ = unix.Unmount(merged, 0)
		}
	}
	t.Cleanup(un)
	return merged, un
}

// TestCopyOverlaySixKinds: the upper directory of an overlay is the exact
// change set; all six kinds are reported and applied.
func TestCopyOverlaySixKinds(t *testing.T) {
	src, _, cp := newTestCopy(t, CopyOptions{})
	if cp.Kind != KindOverlay {
		t.Fatalf("kind %s, want overlay", cp.Kind)
	}
	merged, un := mountOverlay(t, cp)
	sixChanges(t, merged)
	// An opaque directory: a directory removed and made again.
	if err := os.RemoveAll(filepath.Join(merged, "gen", "d000")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(merged, "gen", "d000", "f00001.txt"), "file 1\n")
	un()
	changes, err := cp.Finish()
	if err != nil {
		t.Fatal(err)
	}
	got := summary(changes)
	for _, w := range strings.Fields(wantSix) {
		if !strings.Contains(" "+got+" ", " "+w+" ") {
			t.Errorf("missing %s in %s", w, got)
		}
	}
	if !strings.Contains(got, "gen/d000/f00000.txt:deleted") || strings.Contains(got, "f00001.txt") {
		t.Errorf("opaque directory: %s", got)
	}
	if err := cp.Apply(); err != nil {
		t.Fatal(err)
	}
	checkSixApplied(t, src)
	if _, err := os.Stat(filepath.Join(src, "gen", "d000", "f00000.txt")); err == nil {
		t.Errorf("deletion in the opaque directory not applied")
	}
	if b, _ := os.ReadFile(filepath.Join(src, "gen", "d000", "f00001.txt")); string(b) != "file 1\n" {
		t.Errorf("f00001 = %q", b)
	}
}

func checkSixApplied(t *testing.T, src string) {
	t.Helper()
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(src, p)); return string(b) }
	if read("edit.txt") != "EDITED\n" || read("src/append.txt") != "line\nappended\n" || read("src/new.txt") != "new\n" ||
		read("rewrite.txt") != "rewritten\n" || read(".git/HEAD") != "ref: refs/heads/other\n" {
		t.Errorf("content not applied")
	}
	if _, err := os.Stat(filepath.Join(src, "src", "gone.txt")); err == nil {
		t.Errorf("deletion not applied")
	}
	if fi, _ := os.Stat(filepath.Join(src, "run.sh")); fi == nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("mode not applied: %v", fi)
	}
	if l, _ := os.Readlink(filepath.Join(src, "link")); l != "edit.txt" {
		t.Errorf("symlink not applied: %q", l)
	}
}

// TestCopyFallbackSixKindsAndConflict: without overlay a real copy; all six
// kinds applied; a file changed in the workspace meanwhile is a conflict
// and nothing is applied.
func TestCopyFallbackSixKindsAndConflict(t *testing.T) {
	for _, conflict := range []string{"", "edit", "delete", "create"} {
		t.Run("conflict="+conflict, func(t *testing.T) {
			src, store, cp := newTestCopy(t, CopyOptions{NoOverlay: true})
			if cp.Kind != KindCopy && cp.Kind != KindReflink {
				t.Fatalf("kind %s", cp.Kind)
			}
			if !strings.Contains(cp.Describe(), "overlay unavailable") {
				t.Errorf("describe: %s", cp.Describe())
			}
			sixChanges(t, cp.Tree())
			changes, err := cp.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(changes); got != wantSix {
				t.Fatalf("changes %s", got)
			}
			switch conflict {
			case "edit":
				writeFile(t, filepath.Join(src, "src", "append.txt"), "line\n")
			case "delete":
				_ = os.Remove(filepath.Join(src, "edit.txt"))
			case "create":
				writeFile(t, filepath.Join(src, "src", "new.txt"), "mine\n")
			}
			loaded, err := store.Load(cp.Session)
			if err != nil {
				t.Fatal(err)
			}
			err = loaded.Apply()
			if conflict == "" {
				if err != nil {
					t.Fatal(err)
				}
				checkSixApplied(t, src)
				return
			}
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("want a conflict, got %v", err)
			}
			if b, _ := os.ReadFile(filepath.Join(src, "rewrite.txt")); string(b) != "old\n" {
				t.Errorf("something was applied despite the conflict")
			}
		})
	}
}

// TestStoreListDiscardGC: pending copies are listed; discard and gc remove.
func TestStoreListDiscardGC(t *testing.T) {
	_, store, cp := newTestCopy(t, CopyOptions{NoOverlay: true})
	sixChanges(t, cp.Tree())
	if _, err := cp.Finish(); err != nil {
		t.Fatal(err)
	}
	list, _ := store.List()
	if len(list) != 1 || list[0].State != StatePending {
		t.Fatalf("list %+v", list)
	}
	if err := store.Discard(cp.Session); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cp.Tree()); err == nil {
		t.Errorf("discard left the copy")
	}
	removed, err := store.GC(DefaultTTL, time.Now())
	if err != nil || len(removed) != 1 {
		t.Fatalf("gc %v %v", removed, err)
	}
	if _, err := store.Load(cp.Session); !errors.Is(err, ErrNoSession) {
		t.Errorf("load after gc: %v", err)
	}
}

// TestDiskBound: with a bound, the upper layer sits on a size-limited
// filesystem: writing past it fails with ENOSPC, and the copy says so.
func TestDiskBound(t *testing.T) {
	t.Run("non-root", func(t *testing.T) {
		old := geteuid
		geteuid = func() int { return 1000 }
		defer func() { geteuid = old }()
		_, _, cp := newTestCopy(t, CopyOptions{DiskBytes: 8 << 20})
		if !strings.Contains(cp.DiskBound, "not enforced") || !strings.Contains(cp.Describe(), "non-root") {
			t.Errorf("bound %q", cp.Describe())
		}
		src := t.TempDir()
		store := Store{Dir: filepath.Join(t.TempDir(), "work")}
		_, err := NewCopy(store, src, CopyOptions{Session: "0123456789abcdef0124", DiskBytes: 8 << 20, DiskRequired: true})
		if err == nil || !strings.Contains(err.Error(), "cannot be enforced") {
			t.Errorf("an explicit bound that cannot hold: %v", err)
		}
		if ents, _ := os.ReadDir(store.Dir); len(ents) != 0 {
			t.Errorf("a refused copy left %v", ents)
		}
	})
	if os.Geteuid() != 0 {
		t.Skip("the bound itself needs root")
	}
	_, _, cp := newTestCopy(t, CopyOptions{DiskBytes: 8 << 20, DiskRequired: true})
	merged, un := mountOverlay(t, cp)
	out, err := exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(merged, "big"), "bs=1M", "count=20").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "No space left on device") {
		t.Fatalf("dd past the bound: %v %s", err, out)
	}
	un()
	changes, err := cp.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if !cp.DiskFull || summary(changes) != "big:added" {
		t.Errorf("full %v changes %s", cp.DiskFull, summary(changes))
	}
	if _, err := os.Stat(filepath.Join(cp.Root, "disk.img")); err == nil {
		t.Errorf("the image was not removed")
	}
}
