package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestSnapshotDiff(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "a")
	write("sub/b.txt", "b")
	write(".git/config", "x")
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("host secret"), 0o600)
	os.Symlink(outside, filepath.Join(dir, "link"))
	before, err := Snapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before.Files[".git/config"]; ok {
		t.Error(".git was not skipped")
	}
	if l, ok := before.Files["link"]; !ok || l.Size != int64(len(outside)) {
		t.Errorf("symlink entry = %+v (must hash the target name, not follow it)", l)
	}
	write("a.txt", "A")
	write("c.txt", "c")
	write(".git/config", "y")
	os.Remove(filepath.Join(dir, "sub/b.txt"))
	os.Remove(filepath.Join(dir, "link"))
	os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
	after, _ := Snapshot(dir)
	var got []string
	for _, c := range Diff(before, after) {
		got = append(got, c.Path+":"+c.Change)
	}
	if strings.Join(got, " ") != "a.txt:modified c.txt:added link:modified sub/b.txt:deleted" {
		t.Errorf("diff = %v", got)
	}
	// Limits.
	lim, _ := SnapshotWith(dir, SnapshotLimits{MaxFiles: 1, MaxFileBytes: 1 << 20, MaxTotalBytes: 1 << 20})
	if !lim.Incomplete || len(lim.Files) != 1 {
		t.Errorf("limited snapshot = %+v", lim)
	}
	big, _ := SnapshotWith(dir, SnapshotLimits{MaxFiles: 100, MaxFileBytes: 0, MaxTotalBytes: 1 << 20})
	if f := big.Files["a.txt"]; f.SHA256 != "" || f.Size != 1 {
		t.Errorf("unhashed entry = %+v", f)
	}
}

func TestCopyTreeKeepsSymlinksAndModes(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	writeFile(t, filepath.Join(src, "a.sh"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(src, "a.sh"), 0o751); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(src, "ro", "f"), "f")
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../a.sh", filepath.Join(src, "ro", "rel")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(src, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(src, "ro"), 0o755) })
	before := treeState(t, src)
	dst := filepath.Join(t.TempDir(), "dst")
	if err := CopyTree(src, dst, 1<<20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = RemoveTree(dst) })
	after := treeState(t, dst)
	for k, v := range before {
		if k == "." {
			continue
		}
		if after[k] != v {
			t.Errorf("%s: copy %q, source %q", k, after[k], v)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dst, "out")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("symlink out of the source was followed: %v %v", fi, err)
	}
	if fmtState := treeState(t, src); len(fmtState) != len(before) {
		t.Errorf("source changed")
	}
	if err := RemoveTree(dst); err != nil {
		t.Errorf("read-only directories block removal: %v", err)
	}
}

func TestCopyTreeSizeCap(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "big"), strings.Repeat("x", 4096))
	err := CopyTree(src, filepath.Join(t.TempDir(), "dst"), 1024)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "--max-copy") {
		t.Fatalf("want ErrTooLarge with advice, got %v", err)
	}
	if _, err := TreeSize(src, 1024); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("treeSize: %v", err)
	}
	if err := CopyTree(src, filepath.Join(t.TempDir(), "dst2"), 1<<20); err != nil {
		t.Fatal(err)
	}
}

func TestApplyRefusesConflicts(t *testing.T) {
	src := t.TempDir()
	for name, body := range map[string]string{"a.txt": "a\n", "b.txt": "b\n", "gone.txt": "x\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wc, err := NewWorkCopy(src)
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Remove()
	// The session edits a.txt, adds new/c.txt, deletes gone.txt.
	_ = os.WriteFile(filepath.Join(wc.Dir, "a.txt"), []byte("A\n"), 0o644)
	_ = os.MkdirAll(filepath.Join(wc.Dir, "new"), 0o755)
	_ = os.WriteFile(filepath.Join(wc.Dir, "new", "c.txt"), []byte("c\n"), 0o600)
	_ = os.Remove(filepath.Join(wc.Dir, "gone.txt"))
	after, _ := Snapshot(wc.Dir)
	changes := Diff(wc.Before, after)
	if len(changes) != 3 {
		t.Fatalf("changes %+v", changes)
	}
	// Meanwhile someone edits a.txt in the source: nothing is applied.
	_ = os.WriteFile(filepath.Join(src, "a.txt"), []byte("concurrent\n"), 0o644)
	if err := wc.Apply(changes); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "a.txt") {
		t.Fatalf("want a conflict naming a.txt, got %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "a.txt")); string(b) != "concurrent\n" {
		t.Errorf("a conflicting change was overwritten: %q", b)
	}
	if _, err := os.Stat(filepath.Join(src, "new", "c.txt")); err == nil {
		t.Errorf("a change was applied despite the conflict")
	}
	// Without the conflict everything applies, modes included.
	_ = os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644)
	if err := wc.Apply(changes); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "a.txt")); string(b) != "A\n" {
		t.Errorf("a.txt = %q", b)
	}
	if fi, err := os.Stat(filepath.Join(src, "new", "c.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new/c.txt: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(src, "gone.txt")); err == nil {
		t.Errorf("gone.txt not deleted")
	}
}

// treeState describes every entry below dir: mode and content (or link
// target), for byte-for-byte comparisons.
func treeState(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:]) + " " + fi.ModTime().String()
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
