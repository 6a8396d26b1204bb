package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/fstree"
)

// The staging layer changed between the listing and the promotion (a
// process the sandbox kept runs on): each shape below once failed the
// whole promotion, or lost the change; now what is gone is not held and
// what is new stays staged for the next listing.

// A held entry gone since hold read it, or whose directory went or was
// replaced by a file or a link: scrubbing it out fails with an error
// hold takes as "gone since the listing" (nothing is left to hold; what
// is at the name now stays staged), not as a failed promotion.
func TestHoldEntryGoneSinceListed(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k"})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, upper, "f.txt", "x\n")
	put(t, upper, "d/g.txt", "x\n")
	up, err := fstree.OpenRoot(upper)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	swaps := []struct {
		name, rel string
		swap      func() error
	}{
		{"entry removed", "f.txt", func() error { return os.Remove(filepath.Join(upper, "f.txt")) }},
		{"directory removed", "d/g.txt", func() error { return os.RemoveAll(filepath.Join(upper, "d")) }},
		{"directory now a file", "d/g.txt", func() error { return os.WriteFile(filepath.Join(upper, "d"), []byte("f\n"), 0o644) }},
		{"directory now a link", "d/g.txt", func() error {
			if err := os.Remove(filepath.Join(upper, "d")); err != nil {
				return err
			}
			return os.Symlink(".", filepath.Join(upper, "d"))
		}},
	}
	for i, sw := range swaps {
		if err := sw.swap(); err != nil {
			t.Fatal(err)
		}
		err := s.scrubOut(up, sw.rel, filepath.Join(state, "held", "1", sw.rel), fmt.Sprintf("1-%d", i))
		if err == nil || !goneSinceListed(err) {
			t.Errorf("%s: scrubbing out %s: %v; want an error that says it is gone", sw.name, sw.rel, err)
		}
	}
	if goneSinceListed(nil) || goneSinceListed(os.ErrPermission) {
		t.Error("goneSinceListed takes no error, or a refusal, as gone")
	}
}

// A held deletion whose whiteout the sandbox replaced by a directory
// with a file in it: hold leaves the new directory staged, and the next
// listing decides it (held again by the same rule).
func TestHeldDeletionNowDirStaysStaged(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"x": "k", "keep.txt": "k"})
	s, err := OpenStage(upper, lower, state, func(rel string) (bool, string, bool) {
		return rel == "x" || rel == "x/new.txt", "files.write.deny[0]", false
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Keep = true
	whiteout(t, upper, "x")
	changes, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Change != "deleted" || changes[0].Held == "" {
		t.Fatalf("listed %+v; want x deleted and held", changes)
	}
	if err := os.Remove(filepath.Join(upper, "x")); err != nil {
		t.Fatal(err)
	}
	put(t, upper, "x/new.txt", "new\n")
	p := &promoter{s: s, cp: &Checkpoint{Seq: 1, Changes: changes, Kept: true}}
	if err := p.hold(); err != nil {
		t.Fatalf("hold: %v; want the new directory left staged", err)
	}
	if _, err := os.Stat(filepath.Join(upper, "x", "new.txt")); err != nil {
		t.Fatalf("the new directory was not left staged: %v", err)
	}
	again, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range again {
		got[c.Path] = c.Held
	}
	if got["x"] == "" || got["x/new.txt"] == "" {
		t.Fatalf("the next listing: %+v; want x and x/new.txt listed and held", again)
	}
}

// A link listed, then replaced by a file before it is promoted: the link
// is promoted as decided, and the file is listed again (it is not
// recorded as promoted).
func TestLinkReplacedBeforeRecordListedAgain(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k"})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("keep.txt", filepath.Join(upper, "ln")); err != nil {
		t.Fatal(err)
	}
	changes, err := s.List()
	if err != nil || len(changes) != 1 {
		t.Fatalf("listed %+v, %v; want the link", changes, err)
	}
	if err := os.Remove(filepath.Join(upper, "ln")); err != nil {
		t.Fatal(err)
	}
	put(t, upper, "ln", "file\n")
	p := rawPromoter(t, s, changes)
	if err := p.one(&p.cp.Changes[0]); err != nil {
		t.Fatal(err)
	}
	if tgt, err := os.Readlink(filepath.Join(lower, "ln")); err != nil || tgt != "keep.txt" {
		t.Fatalf("promoted: %q, %v; want the link as decided", tgt, err)
	}
	again, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || again[0].Path != "ln" || again[0].Type != TypeFile {
		t.Fatalf("the next listing: %+v; want ln, now a file, listed again", again)
	}
}

// The listing's walk meets a staged directory that became a file between
// its visit and its open: the listing succeeds, and the next one lists
// the file.
func TestListDirBecameFileDuringWalk(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k"})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, upper, "d/a.txt", "a\n")
	listWithHook(t, s, func(e *fstree.Entry) {
		if e.Rel == "d" {
			if err := os.RemoveAll(filepath.Join(upper, "d")); err != nil {
				t.Fatal(err)
			}
			put(t, upper, "d", "now a file\n")
		}
	})
	again, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || again[0].Path != "d" || again[0].Type != TypeFile {
		t.Fatalf("the next listing: %+v; want d, a file", again)
	}
}

// listWithHook lists s as List does, calling hook on each entry after the
// walk read it and before it is visited (where a kept process can swap
// it); the listing must be complete.
func listWithHook(t *testing.T, s *Stage, hook func(e *fstree.Entry)) []StagedChange {
	return listWithHooks(t, s, hook, nil)
}

// listWithHooks is listWithHook with after run between the walk and the
// decisions (the link check reads the staging layer then).
func listWithHooks(t *testing.T, s *Stage, hook func(e *fstree.Entry), after func()) []StagedChange {
	s.dirs = map[string]fstree.Stamp{}
	l, err := s.newLister(false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.conflicts = true
	res, err := fstree.Walk(s.Upper, fstree.Options{}, func(e *fstree.Entry) bool {
		if hook != nil {
			hook(e)
		}
		return l.visit(e)
	})
	if err != nil || res.Incomplete != "" || l.err != nil {
		t.Fatalf("walk %v %q %v", err, res.Incomplete, l.err)
	}
	if err := l.expandDeletions(); err != nil {
		t.Fatal(err)
	}
	if after != nil {
		after()
	}
	l.decideAll()
	return l.out
}

// A link X swapped for a directory between the walk's lstat and visit's
// readlink (found in review): X is held, so the link check does not count
// the upper X as promoted, and q -> X/secret, which leaves through the
// user's own link X, is held with or without the race.
func TestSwappedLinkCannotHideALinkOut(t *testing.T) {
	for _, race := range []bool{false, true} {
		outside := t.TempDir()
		lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k"})
		if err := os.Symlink(outside, filepath.Join(lower, "X")); err != nil { // the user's own link out
			t.Fatal(err)
		}
		s, err := OpenStage(upper, lower, state, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("X/secret", filepath.Join(upper, "q")); err != nil {
			t.Fatal(err)
		}
		if race {
			if err := os.Symlink("keep.txt", filepath.Join(upper, "X")); err != nil {
				t.Fatal(err)
			}
		}
		out := listWithHook(t, s, func(e *fstree.Entry) {
			if race && e.Rel == "X" {
				if err := os.Remove(filepath.Join(upper, "X")); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(filepath.Join(upper, "X"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		})
		for _, c := range out {
			if c.Held == "" {
				t.Errorf("race=%v: %s %s %s promoted; want every change held", race, c.Path, c.Change, c.Type)
			}
		}
	}
}

// A deletion made in a new directory between the walk and its record
// (found in review): the directory's recorded stamp is the listed one, so
// the next listing finds the deletion (the workspace has D/l, the upper
// directory does not).
func TestDirRecordKeepsDeletionSinceListed(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k"})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(upper, "D"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../keep.txt", filepath.Join(upper, "D", "l")); err != nil {
		t.Fatal(err)
	}
	changes, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(upper, "D", "l")); err != nil { // the kept process
		t.Fatal(err)
	}
	p := rawPromoter(t, s, changes)
	for i := range p.cp.Changes {
		if err := p.one(&p.cp.Changes[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Readlink(filepath.Join(lower, "D", "l")); err != nil {
		t.Fatalf("D/l was not promoted as listed: %v", err)
	}
	again, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range again {
		found = found || (c.Path == "D/l" && c.Change == "deleted")
	}
	if !found {
		t.Fatalf("the next listing: %+v; want D/l deleted", again)
	}
}

// rawPromoter is a promoter of changes over s's directories, its roots
// closed when the test ends (for tests that promote one change at a time).
func rawPromoter(t *testing.T, s *Stage, changes []StagedChange) *promoter {
	t.Helper()
	low, err := fstree.OpenRoot(s.Lower)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = low.Close() })
	up, err := fstree.OpenRoot(s.Upper)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = up.Close() })
	if s.st.Promoted == nil {
		s.st.Promoted = map[string]promotedEntry{}
	}
	cp := &Checkpoint{Seq: 1, Changes: changes, After: map[string]fstree.Stamp{}, BeforeMode: map[string]uint32{}}
	return &promoter{s: s, low: low, up: up, cp: cp, before: filepath.Join(s.State, "before", "1"), failed: map[string]bool{}}
}
