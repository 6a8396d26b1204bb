package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// MountsUnder finds a mount at a path with a space (mountinfo escapes it
// as \040) and not one beside dir; unmountBelow detaches it.
func TestMountsUnderEscapedPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	mp := filepath.Join(dir, "a dir")
	beside := filepath.Join(base, "ws2")
	for _, d := range []string{mp, beside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", d, "tmpfs", 0, "size=1m"); err != nil {
			t.Skipf("no tmpfs mount here: %v", err)
		}
		t.Cleanup(func() { _ = unix.Unmount(d, unix.MNT_DETACH) })
	}
	got, err := MountsUnder(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{mp}) {
		t.Fatalf("MountsUnder(%s) = %q, want [%q]", dir, got, mp)
	}
	unmountBelow(dir)
	if got, _ := MountsUnder(dir); len(got) != 0 {
		t.Errorf("after unmountBelow: %q still mounted", got)
	}
}
