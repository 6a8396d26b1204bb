package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil/fsclock"
)

// treeContent maps every file below dir to its content (symlinks to
// "->target"), for byte-identical comparisons.
func treeContent(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "->" + l
		case d.IsDir():
			out[rel+"/"] = ""
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, _ := d.Info()
			out[rel] = string(b) + "|" + fi.Mode().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRewindRestoresByteIdentical(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"a.txt": "one", "b/c.txt": "c", "gone.txt": "g"})
	orig := treeContent(t, lower)
	s, _ := OpenStage(upper, lower, state, nil)
	put(t, upper, "a.txt", "two")
	put(t, upper, "new/n.txt", "n")
	mustPromote(t, s, "call-1")
	mid := treeContent(t, lower)
	put(t, upper, "a.txt", "three")
	put(t, upper, "b/c.txt", "c2")
	whiteout(t, upper, "gone.txt")
	if err := os.Chmod(filepath.Join(upper, "new/n.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustPromote(t, s, "call-2")
	if got := readOr(filepath.Join(lower, "a.txt")); got != "three" {
		t.Fatalf("a.txt %q", got)
	}
	// Back to before call-2, then before call-1.
	if _, err := s.Rewind("call-2"); err != nil {
		t.Fatal(err)
	}
	if got := treeContent(t, lower); !equalMaps(got, mid) {
		t.Fatalf("after rewinding call-2:\n got %v\nwant %v", got, mid)
	}
	if _, err := s.Rewind("call-1"); err != nil {
		t.Fatal(err)
	}
	if got := treeContent(t, lower); !equalMaps(got, orig) {
		t.Fatalf("after rewinding call-1:\n got %v\nwant %v", got, orig)
	}
}

func TestRewindRefusesConflicts(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"a.txt": "one"})
	s, _ := OpenStage(upper, lower, state, nil)
	put(t, upper, "a.txt", "two")
	mustPromote(t, s, "call-1")
	fsclock.Tick(t, filepath.Dir(lower))
	put(t, lower, "a.txt", "user's edit")
	if _, err := s.Rewind(""); !errors.Is(err, ErrRewindConflict) {
		t.Fatalf("rewind over a user's edit: %v", err)
	}
	if got := readOr(filepath.Join(lower, "a.txt")); got != "user's edit" {
		t.Fatalf("the user's edit was overwritten: %q", got)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestForkIsTheWorkspaceAfterACall(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"a.txt": "one"})
	s, _ := OpenStage(upper, lower, state, nil)
	put(t, upper, "a.txt", "two")
	put(t, upper, "b.txt", "b")
	mustPromote(t, s, "call-1")
	after1 := treeContent(t, lower)
	put(t, upper, "a.txt", "three")
	whiteout(t, upper, "b.txt")
	put(t, upper, "c.txt", "c")
	mustPromote(t, s, "call-2")
	now := treeContent(t, lower)
	dst := filepath.Join(t.TempDir(), "fork")
	if _, err := s.Fork("call-1", dst, 0); err != nil {
		t.Fatal(err)
	}
	if got := treeContent(t, dst); !equalMaps(got, after1) {
		t.Fatalf("fork after call-1:\n got %v\nwant %v", got, after1)
	}
	if got := treeContent(t, lower); !equalMaps(got, now) {
		t.Fatalf("fork changed the workspace: %v", got)
	}
}
