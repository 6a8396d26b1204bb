package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil/treestate"
)

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
	before := treestate.Of(t, src)
	dst := filepath.Join(t.TempDir(), "dst")
	if err := CopyTree(src, dst, 1<<20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = RemoveTree(dst) })
	after := treestate.Of(t, dst)
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
	if fmtState := treestate.Of(t, src); len(fmtState) != len(before) {
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

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
