package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestApplyRefusesHostHazards: copy mode's apply makes promotion's
// decisions: a git repository under an ordinary name (built through the
// overlay, or in a real copy) or a host-run file refuses the whole apply,
// and nothing is written.
func TestApplyRefusesHostHazards(t *testing.T) {
	for _, noOverlay := range []bool{false, true} {
		src, _, cp := newTestCopy(t, CopyOptions{NoOverlay: noOverlay, Session: map[bool]string{false: "0123456789abcdef0a01", true: "0123456789abcdef0a02"}[noOverlay]})
		root, un := cp.ChangedRoot(), func() {}
		if cp.Kind == KindOverlay {
			root, un = mountOverlay(t, cp)
		}
		for p, c := range map[string]string{"lib/HEAD": "ref: refs/heads/main\n", "lib/config": "[core]\n\tfsmonitor = touch /tmp/x\n", "fine.txt": "ok"} {
			writeFile(t, filepath.Join(root, p), c)
		}
		for _, d := range []string{"lib/objects", "lib/refs"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		un() // the sandbox is gone
		if _, err := cp.Finish(); err != nil {
			t.Fatal(err)
		}
		err := cp.Apply()
		if !errors.Is(err, ErrGuarded) {
			t.Fatalf("%s copy: apply with a planted repository: %v", cp.Kind, err)
		}
		for _, p := range []string{"lib/HEAD", "fine.txt"} {
			if _, err := os.Lstat(filepath.Join(src, p)); err == nil {
				t.Errorf("%s copy: %s was applied", cp.Kind, p)
			}
		}
	}
}
