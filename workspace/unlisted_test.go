package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// A staged directory swapped out before the walk opened it and back
// before the link check (found in review): the walk lists nothing below
// it, so the staged D/x (a directory over the user's own link D/x ->
// outside) is not promoted, and q -> D/x/secret resolves, on the host,
// through that link out. The link check judges the host's view (the
// workspace's D/x, not the unlisted staged one) and holds q. Without the
// swap D/x is promoted and q stays inside.
func TestUnlistedStagedEntryIsNotTheView(t *testing.T) {
	for _, race := range []bool{false, true} {
		outside, lower, upper, s := stageWithLinkOut(t, map[string]string{"D/keep.txt": "k"}, "D", "x")
		if err := os.MkdirAll(filepath.Join(upper, "D", "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(upper, "D"), fileMode(t, filepath.Join(lower, "D"))); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("D/x/secret", filepath.Join(upper, "q")); err != nil {
			t.Fatal(err)
		}
		aside := filepath.Join(t.TempDir(), "D")
		hook := func(e *fstree.Entry) {
			if !race || e.Rel != "D" {
				return
			}
			// The kept process: D out, a file in its place, so the
			// walk's open of D finds no directory.
			if err := os.Rename(filepath.Join(upper, "D"), aside); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(upper, "D"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		after := func() {
			if !race {
				return
			}
			if err := os.Remove(filepath.Join(upper, "D")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(aside, filepath.Join(upper, "D")); err != nil {
				t.Fatal(err)
			}
		}
		out := listWithHooks(t, s, hook, after)
		var q *StagedChange
		for i := range out {
			if out[i].Path == "q" {
				q = &out[i]
			}
			if race && out[i].Path == "D/x" {
				t.Errorf("race: D/x listed (%s); the walk never read D", out[i].Change)
			}
		}
		switch {
		case q == nil:
			t.Fatalf("race=%v: q not listed: %+v", race, out)
		case race && q.Held == "":
			t.Errorf("race: q -> D/x/secret promoted; on the host it resolves through the workspace's D/x -> %s", outside)
		case !race && q.Held != "":
			t.Errorf("no race: q held (%s); D/x is promoted as a directory, so q stays inside", q.Held)
		}
	}
}

func fileMode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// A listed link replaced after the walk (a kept process) by a link out:
// the promoter writes the listed target (read once, never again), so the
// link check judges that one, and q -> X/secret, through X -> sub, stays
// inside; the workspace gets X -> sub, not the link out.
func TestListedLinkJudgedAsPromoted(t *testing.T) {
	outside, lower, upper, s := stageWithLinkOut(t, map[string]string{"sub/keep.txt": "k"}, "X")
	for name, target := range map[string]string{"X": "sub", "q": "X/secret"} {
		if err := os.Symlink(target, filepath.Join(upper, name)); err != nil {
			t.Fatal(err)
		}
	}
	out := listWithHooks(t, s, nil, func() {
		x := filepath.Join(upper, "X")
		if err := os.Remove(x); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, x); err != nil {
			t.Fatal(err)
		}
	})
	var x *StagedChange
	for i, c := range out {
		if c.Held != "" {
			t.Errorf("%s held (%s); judged as listed, both stay inside", c.Path, c.Why)
		}
		if c.Path == "X" {
			x = &out[i]
		}
	}
	if x == nil {
		t.Fatalf("X not listed: %+v", out)
	}
	if err := rawPromoter(t, s, out).one(x); err != nil {
		t.Fatal(err)
	}
	if got, err := os.Readlink(filepath.Join(lower, "X")); err != nil || got != "sub" {
		t.Errorf("the workspace's X -> %q (%v); want the listed, judged target sub", got, err)
	}
}

// A deletion in a promoted new directory (opaque: it leaves no whiteout)
// whose mtime the sandbox set back to the recorded one (utimensat): the
// directory's ctime, which no call can set, still shows the change, and
// the deletion is listed.
func TestOpaqueDeletionSeenWithMTimeReset(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "N/a", "a")
	put(t, upper, "N/b", "b")
	mustPromote(t, s, "call-1")
	if _, err := os.Stat(filepath.Join(lower, "N", "a")); err != nil {
		t.Fatalf("N/a not promoted: %v", err)
	}
	if _, err := unix.Lgetxattr(filepath.Join(upper, "N"), "user.overlay.opaque", make([]byte, 8)); err != nil {
		t.Skipf("the promoted directory is not marked opaque here (%v): nothing to test", err)
	}
	n := filepath.Join(upper, "N")
	before, err := os.Lstat(n)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(n, "a")); err != nil { // the sandbox's deletion: no whiteout
		t.Fatal(err)
	}
	if err := os.Chtimes(n, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	changes, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if c.Path == "N/a" && c.Change == "deleted" {
			return
		}
	}
	t.Errorf("N/a deleted in the sandbox with N's mtime set back: not listed (%+v); the workspace keeps it", changes)
}
