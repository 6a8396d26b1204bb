package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// A directory the user moves in on the host (its files keep their old
// ctimes) below a directory the sandbox made (promoted opaque: the
// sandbox never sees it) is not the sandbox's to delete when the sandbox
// removes or chmods what holds it (found in an attacker's review). The
// deletion of the parent is held (the directory is not empty).

// The user moves an old directory of theirs (files older than the
// session) into a promoted subdirectory N/sub of the sandbox's opaque N.
// The sandbox (which sees only its own N) then removes N/sub.
func TestMovedInDirStaysWhenSubdirRemoved(t *testing.T) {
	old := t.TempDir()
	put(t, old, "B/notes.txt", "user")
	tickClock(t, old)
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k"})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, upper, "N/a", "a")
	put(t, upper, "N/sub/f", "f")
	mustPromote(t, s, "call-1")
	if err := os.Rename(filepath.Join(old, "B"), filepath.Join(lower, "N/sub/B")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(upper, "N/sub")); err != nil {
		t.Fatal(err)
	}
	cp := mustPromote(t, s, "call-2")
	for _, c := range changesOf(cp) {
		t.Logf("%s %s %s held=%q %s", c.Path, c.Change, c.Type, c.Held, c.Why)
	}
	if !exists(filepath.Join(lower, "N/sub/B/notes.txt")) {
		t.Errorf("the user's N/sub/B/notes.txt (never seen by the sandbox) was deleted")
	}
}

// Same, moved directly into N; the sandbox chmods N.
func TestMovedInDirStaysWhenParentChmodded(t *testing.T) {
	old := t.TempDir()
	put(t, old, "B/notes.txt", "user")
	tickClock(t, old)
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k"})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, upper, "N/a", "a")
	mustPromote(t, s, "call-1")
	if err := os.Rename(filepath.Join(old, "B"), filepath.Join(lower, "N/B")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(upper, "N"), 0o700); err != nil {
		t.Fatal(err)
	}
	cp := mustPromote(t, s, "call-2")
	for _, c := range changesOf(cp) {
		t.Logf("%s %s %s held=%q %s", c.Path, c.Change, c.Type, c.Held, c.Why)
	}
	if !exists(filepath.Join(lower, "N/B/notes.txt")) {
		t.Errorf("the user's N/B/notes.txt (never seen by the sandbox) was deleted")
	}
}

// Same, the sandbox removes N itself (whiteout: N is in the workspace now).
func TestMovedInDirStaysWhenParentRemoved(t *testing.T) {
	old := t.TempDir()
	put(t, old, "B/notes.txt", "user")
	tickClock(t, old)
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k"})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, upper, "N/a", "a")
	mustPromote(t, s, "call-1")
	if err := os.Rename(filepath.Join(old, "B"), filepath.Join(lower, "N/B")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(upper, "N")); err != nil {
		t.Fatal(err)
	}
	whiteout(t, upper, "N")
	cp := mustPromote(t, s, "call-2")
	for _, c := range changesOf(cp) {
		t.Logf("%s %s %s held=%q %s", c.Path, c.Change, c.Type, c.Held, c.Why)
	}
	if !exists(filepath.Join(lower, "N/B/notes.txt")) {
		t.Errorf("the user's N/B/notes.txt (never seen by the sandbox) was deleted")
	}
}
