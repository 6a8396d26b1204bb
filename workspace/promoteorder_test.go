package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// Promotion leaves the view the link check judged (found in an attacker's
// review): an entry held or failed while promoted holds the links that
// resolve through it, and links go in the order they resolve through
// each other.

// promoteListed runs Promote's phases on an already decided list
// (so a test can act as the kept process between listing and promotion).
func promoteListed(t *testing.T, s *Stage, changes []StagedChange) *promoter {
	p := rawPromoter(t, s, changes)
	p.promoteAll(changes)
	return p
}

// A file held by its content at write time (a kept process rewrote it as
// a gitdir: link after the listing) holds the link judged through it: the
// host keeps the user's Y -> outside, so q -> Y/secret must not go.
func TestContentHeldFileHoldsLinkThrough(t *testing.T) {
	outside, lower, upper, s := stageWithLinkOut(t, map[string]string{"keep.txt": "k"}, "Y")
	put(t, upper, "Y", "plain")
	if err := os.Symlink("Y/secret", filepath.Join(upper, "q")); err != nil {
		t.Fatal(err)
	}
	changes, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if h := heldOf(changes); len(h) != 0 {
		t.Fatalf("held at listing: %v", h)
	}
	put(t, upper, "Y", "gitdir: ../x\n") // the kept process, after the listing
	promoteListed(t, s, changes)
	fi, _ := os.Lstat(filepath.Join(lower, "Y"))
	if exists(filepath.Join(lower, "q")) && fi != nil && fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("q -> Y/secret promoted while the workspace's Y -> %s (held: %v)", outside, heldOf(changes))
	}
}

// Links are promoted in the order they resolve through each other: A is
// judged through the listed link D (-> sub); D then fails (the
// workspace's directory D still holds a held entry) and the host keeps
// D/evil -> outside, so A, promoted after D, is held.
func TestLinkPromotedAfterLinkItResolvesThrough(t *testing.T) {
	outside, lower, upper, s := stageWithLinkOut(t, map[string]string{"keep.txt": "k", "D/f": "f"}, "D", "evil")
	s.Decide = func(rel string) (bool, string, bool) { return rel == "D/evil", "files.write", false }
	put(t, upper, "sub/x", "x")
	if err := os.Symlink("sub", filepath.Join(upper, "D")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("D/evil/secret", filepath.Join(upper, "A")); err != nil {
		t.Fatal(err)
	}
	cp := mustPromote(t, s, "c")
	if exists(filepath.Join(lower, "A")) {
		fi, _ := os.Lstat(filepath.Join(lower, "D", "evil"))
		if fi != nil && fi.Mode()&os.ModeSymlink != 0 {
			t.Fatalf("A -> D/evil/secret promoted; host D/evil -> %s (held: %v)", outside, heldRules(cp))
		}
	}
}

// The walk lists D/l (D a directory copied up, unlisted); a kept process
// then swaps the upper D for a file before the decisions. The view keeps
// the workspace's D with the listed D/l promoted into it (the staging
// layer's D is not read again): A -> D/l/evil/secret resolves, on the
// host, through D/l -> ../N and the user's N/evil -> outside, and is held.
func TestUnlistedDirSwappedKeepsListedChildren(t *testing.T) {
	_, lower, upper, s := stageWithLinkOut(t, map[string]string{"D/keep": "k", "N/f": "f"}, "N", "evil")
	if err := os.Mkdir(filepath.Join(upper, "D"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../N", filepath.Join(upper, "D", "l")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("D/l/evil/secret", filepath.Join(upper, "A")); err != nil {
		t.Fatal(err)
	}
	changes := listWithHooks(t, s, nil, func() { // the kept process, after the walk
		if err := os.RemoveAll(filepath.Join(upper, "D")); err != nil {
			t.Fatal(err)
		}
		put(t, upper, "D", "now a file")
	})
	promoteListed(t, s, changes)
	if tg, err := os.Readlink(filepath.Join(lower, "A")); err == nil {
		if real, err := filepath.EvalSymlinks(filepath.Join(lower, "A", "..", tg[:len("D/l/evil")])); err == nil {
			t.Fatalf("A -> %s promoted; on the host it resolves to %s (held: %v)", tg, real, heldOf(changes))
		}
	}
}
