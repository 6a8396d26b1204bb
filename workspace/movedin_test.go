package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil/fsclock"
)

// Below a directory the sandbox made (promoted, opaque: the sandbox never
// sees the workspace's entries there again), a directory the user moves
// in on the host keeps its files' old ctimes. When the sandbox then
// removes or changes what holds it, the user's files are not the
// sandbox's deletions: they stay, and the call says the directory is
// held (a conflict), not a word lost.
func TestMovedInDirBelowSandboxDirStays(t *testing.T) {
	cases := []struct {
		name string
		made string // what call 1 writes (the sandbox's)
		into string // where the user moves their directory B
		act  func(t *testing.T, upper string)
	}{
		{"rm -rf N", "N/a", "N/B", func(t *testing.T, upper string) {
			if err := os.RemoveAll(filepath.Join(upper, "N")); err != nil {
				t.Fatal(err)
			}
			whiteout(t, upper, "N")
		}},
		{"chmod N", "N/a", "N/B", func(t *testing.T, upper string) {
			if err := os.Chmod(filepath.Join(upper, "N"), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"rm N/a", "N/a", "N/B", func(t *testing.T, upper string) {
			if err := os.Remove(filepath.Join(upper, "N/a")); err != nil {
				t.Fatal(err)
			}
		}},
		{"rm -rf the workspace's dir holding N", "X/N/a", "X/N/B", func(t *testing.T, upper string) {
			if err := os.RemoveAll(filepath.Join(upper, "X")); err != nil {
				t.Fatal(err)
			}
			whiteout(t, upper, "X")
		}},
		{"rm -rf N, nested deeper", "N/M/a", "N/M/B", func(t *testing.T, upper string) {
			if err := os.RemoveAll(filepath.Join(upper, "N")); err != nil {
				t.Fatal(err)
			}
			whiteout(t, upper, "N")
		}},
		{"rm -rf N, recreated", "N/a", "N/B", func(t *testing.T, upper string) {
			if err := os.RemoveAll(filepath.Join(upper, "N")); err != nil {
				t.Fatal(err)
			}
			put(t, upper, "N/c", "c")
			setOpq(t, upper, "N")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := t.TempDir()
			put(t, old, "B/notes.txt", "user")
			put(t, old, "B/sub/deep.txt", "user deep")
			fsclock.Tick(t, old)
			lower, upper, s := newStage(t, map[string]string{"keep.txt": "k", "X/old.txt": "o"})
			put(t, upper, tc.made, "a")
			mustPromote(t, s, "call-1")
			if err := os.Rename(filepath.Join(old, "B"), filepath.Join(lower, tc.into)); err != nil {
				t.Fatal(err)
			}
			tc.act(t, upper)
			cp := mustPromote(t, s, "call-2")
			held := false
			for _, c := range changesOf(cp) {
				t.Logf("%s %s %s held=%q %s", c.Path, c.Change, c.Type, c.Held, c.Why)
				if c.Path == tc.into && c.Held == HazardConflict && strings.Contains(c.Why, "never saw") {
					held = true
				}
			}
			for _, p := range []string{"notes.txt", "sub/deep.txt"} {
				if !exists(filepath.Join(lower, tc.into, p)) {
					t.Errorf("the user's %s/%s was deleted", tc.into, p)
				}
			}
			// (Recreated, N may be taken for the one promoted, its inode
			// reused: then nothing is expanded and B just stays.)
			if strings.HasPrefix(tc.name, "rm -rf") && !strings.HasSuffix(tc.name, "recreated") && !held {
				t.Errorf("the user's %s is not said held as a conflict", tc.into)
			}
			// What the sandbox made and removed goes.
			if tc.name != "chmod N" && exists(filepath.Join(lower, tc.made)) {
				t.Errorf("the sandbox removed %s; the workspace still has it", tc.made)
			}
			if tc.name == "rm -rf the workspace's dir holding N" && exists(filepath.Join(lower, "X/old.txt")) {
				t.Errorf("the sandbox removed X; the workspace still has X/old.txt")
			}
		})
	}
}
