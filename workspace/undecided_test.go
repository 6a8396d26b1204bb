package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// A change that cannot be decided is held, with the reason. Staged: a
// file listed in the upper layer that is gone, or has become a directory,
// by the time it is decided (a background process the sandbox kept)
// cannot be read to decide whether it is a gitdir: link, and is held as
// hazard:unreadable; what could be read is decided as usual.
func TestUndecidedStagedChangeIsHeld(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k"})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"gone.txt", "turned.txt", "fine.txt"} {
		put(t, upper, p, "x\n")
	}
	l, err := s.newLister(false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.conflicts = true
	if err := l.collect(); err != nil {
		t.Fatal(err)
	}
	// Listed; now changed under the lister before it decides.
	if err := os.Remove(filepath.Join(upper, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(upper, "turned.txt")); err != nil {
		t.Fatal(err)
	}
	put(t, upper, "turned.txt/", "")
	l.decideAll()
	got := map[string]StagedChange{}
	for _, c := range l.out {
		got[c.Path] = c
	}
	for _, p := range []string{"gone.txt", "turned.txt"} {
		c, ok := got[p]
		if !ok || c.Held != HazardNotStaged || !strings.Contains(c.Why, "could not be read to decide") || !strings.Contains(c.Why, "undecided changes are held") {
			t.Errorf("%s, undecidable: %+v (listed %v); want held as %s with the reason", p, c, ok, HazardNotStaged)
		}
	}
	if c := got["fine.txt"]; c.Path != "fine.txt" || c.Held != "" {
		t.Errorf("fine.txt: %+v; want listed and promoted", c)
	}
}

// A real copy (no overlay): a recorded change whose entry in the copy
// cannot be read when apply decides it (a link now stands where its
// directory was: never followed) is held with the reason, and apply
// refuses the whole copy, writing nothing.
func TestUndecidedCopyChangeIsHeld(t *testing.T) {
	src, _, cp := newTestCopy(t, CopyOptions{NoOverlay: true, Session: "0123456789abcdef0a03"})
	if cp.Kind == KindOverlay {
		t.Fatalf("NoOverlay gave an overlay copy")
	}
	root := cp.ChangedRoot()
	writeFile(t, filepath.Join(root, "fine.txt"), "ok\n")
	writeFile(t, filepath.Join(root, "sub", "new.txt"), "new\n")
	if _, err := cp.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "other")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("other", filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	held, err := cp.Hazards()
	if err != nil {
		t.Fatalf("hazards: %v; want the undecidable change held, not an error", err)
	}
	found := false
	for _, h := range held {
		if h.Path == "sub/new.txt" {
			found = h.Held == HazardNotStaged && strings.Contains(h.Why, "could not be read to decide") && strings.Contains(h.Why, "undecided changes are held")
		}
	}
	if !found {
		t.Fatalf("held: %+v; want sub/new.txt held as %s with the reason", held, HazardNotStaged)
	}
	err = cp.Apply()
	if !errors.Is(err, ErrGuarded) || !strings.Contains(err.Error(), "sub/new.txt (hazard:unreadable") {
		t.Fatalf("apply: %v; want it refused, naming sub/new.txt", err)
	}
	for _, p := range []string{"fine.txt", "sub/new.txt"} {
		if exists(filepath.Join(src, p)) {
			t.Errorf("%s was applied", p)
		}
	}
}

// A staged link listed by the walk that is no longer a link (a file now:
// readlink answers EINVAL) or is gone (ENOENT) when its target is read (a
// process the sandbox kept swaps it, CI's TestSteerBackgroundRepointCopyApply)
// is not an error of the listing: it is held as undecided (what is there
// then is decided by a later listing when the hold leaves it).
func TestLinkReplacedAfterWalkWaits(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k"})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"turned", "gone"} {
		if err := os.Symlink("keep.txt", filepath.Join(upper, p)); err != nil {
			t.Fatal(err)
		}
	}
	dfd, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	var entries []fstree.Entry
	for _, p := range []string{"turned", "gone"} {
		st, err := fstree.Lstat(dfd, p)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, fstree.Entry{Rel: p, Name: p, Dirfd: dfd, Depth: 1, Stamp: st})
	}
	// Walked; now swapped under the lister before it reads the targets.
	if err := os.Remove(filepath.Join(upper, "turned")); err != nil {
		t.Fatal(err)
	}
	put(t, upper, "turned", "now a file\n")
	if err := os.Remove(filepath.Join(upper, "gone")); err != nil {
		t.Fatal(err)
	}
	l, err := s.newLister(false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range entries {
		if !l.visit(&entries[i]) {
			t.Errorf("%s: the visit stopped", entries[i].Rel)
		}
	}
	l.decideAll()
	if l.err != nil || len(l.out) != 2 {
		t.Fatalf("a link swapped after the walk: err %v, listed %+v; want no error and both listed", l.err, l.out)
	}
	for _, c := range l.out {
		// Held, not left out: the link check reads the upper directory
		// live and would count an unlisted entry as promoted.
		if c.Held != HazardNotStaged || !strings.Contains(c.Why, "changed while it was read") {
			t.Errorf("%s: %s %q; want held as %s with the reason", c.Path, c.Held, c.Why, HazardNotStaged)
		}
	}
	if _, err := unix.Readlinkat(dfd, "turned", make([]byte, 64)); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("readlink of a file: %v, want EINVAL (the case this test covers)", err)
	}
	cs, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Path != "turned" || cs[0].Type != "file" || cs[0].Held != "" {
		t.Fatalf("the next listing: %+v; want turned, a file, decided", cs)
	}
}

// The same in rw promotion, whose listing leaves a file's content to the
// copy: an entry gone, or turned into a directory, between the decisions
// and its copy (a kept process) is held, and nothing of it reaches the
// workspace; the rest is promoted.
func TestUndecidedAtCopyIsHeld(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	for _, p := range []string{"gone.txt", "turned.txt", "fine.txt"} {
		put(t, upper, p, "x\n")
	}
	cp, err := s.decideCall("c1")
	if err != nil || cp == nil {
		t.Fatalf("decideCall: %v, %v", cp, err)
	}
	if err := os.Remove(filepath.Join(upper, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(upper, "turned.txt")); err != nil {
		t.Fatal(err)
	}
	put(t, upper, "turned.txt/HEAD", "gitdir: /tmp/evil\n")
	if cp, err = s.promoteDecided(cp); err != nil {
		t.Fatal(err)
	}
	held := heldRules(cp)
	for _, p := range []string{"gone.txt", "turned.txt"} {
		if held[p] == "" {
			t.Errorf("%s, changed between its decision and its copy: not held (held: %v)", p, held)
		}
		if exists(filepath.Join(lower, p)) {
			t.Errorf("%s reached the workspace", p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(lower, "fine.txt")); err != nil || string(b) != "x\n" {
		t.Errorf("fine.txt in the workspace: %q, %v", b, err)
	}
}
