package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil/fsclock"
)

// oldUserDir makes, outside the workspace, the user's directory B (files
// older than the session) and returns its path.
func oldUserDir(t *testing.T) string {
	old := t.TempDir()
	put(t, old, "B/notes.txt", "user")
	put(t, old, "B/sub/deep.txt", "user deep")
	fsclock.Tick(t, old)
	return filepath.Join(old, "B")
}

// moveIn moves the user's directory b to rel in the workspace lower.
func moveIn(t *testing.T, b, lower, rel string) {
	t.Helper()
	if err := os.Rename(b, filepath.Join(lower, rel)); err != nil {
		t.Fatal(err)
	}
}

// rmrf is the sandbox's rm -rf of the workspace's rel: gone from the
// upper directory, a whiteout in its place.
func rmrf(t *testing.T, upper, rel string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(upper, rel)); err != nil {
		t.Fatal(err)
	}
	whiteout(t, upper, rel)
}

// userFileStays fails the test when the user's file rel is gone from the
// workspace lower after the checkpoint cp.
func userFileStays(t *testing.T, lower, rel string, cp *Checkpoint) {
	t.Helper()
	if !exists(filepath.Join(lower, rel)) {
		t.Errorf("the user's %s was deleted; held: %v", rel, heldRules(cp))
	}
}

func readStr(p string) string { b, _ := os.ReadFile(p); return string(b) }

// The user's directories moved into directories the sandbox sees only
// its own entries of (sealed: unseen.go), with files older than the
// session, are never overwritten or deleted by what the sandbox does
// there (found by an attacker's review of a first fix).

// Made N; the user moves B into N; the sandbox (which cannot see B)
// writes N/B/notes.txt: held, the user's notes stay.
func TestUnseenMovedInOverwrittenBySandboxWrite(t *testing.T) {
	b := oldUserDir(t)
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "N/a", "a")
	mustPromote(t, s, "c1")
	moveIn(t, b, lower, "N/B")
	put(t, upper, "N/B/notes.txt", "sandbox")
	cp := mustPromote(t, s, "c2")
	logCP(t, "c2", cp)
	if got := readStr(filepath.Join(lower, "N/B/notes.txt")); got != "user" {
		t.Errorf("the user's N/B/notes.txt (never seen by the sandbox) is now %q; held: %v", got, heldRules(cp))
	}
}

// A pre-existing dir D recreated by the sandbox (opaque, "modified");
// the user moves B into D; the sandbox rm -rf D.
func TestUnseenMovedInRecreatedDirRmRf(t *testing.T) {
	b := oldUserDir(t)
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k", "D/x": "x"})
	put(t, upper, "D/y", "y")
	setOpq(t, upper, "D")
	logCP(t, "c1", mustPromote(t, s, "c1"))
	moveIn(t, b, lower, "D/B")
	rmrf(t, upper, "D")
	cp := mustPromote(t, s, "c2")
	logCP(t, "c2", cp)
	userFileStays(t, lower, "D/B/notes.txt", cp)
}

// Same, the sandbox only removes D/y (opaqueDeletions).
func TestUnseenMovedInRecreatedDirRmEntry(t *testing.T) {
	b := oldUserDir(t)
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k", "D/x": "x"})
	put(t, upper, "D/y", "y")
	setOpq(t, upper, "D")
	logCP(t, "c1", mustPromote(t, s, "c1"))
	moveIn(t, b, lower, "D/B")
	os.Remove(filepath.Join(upper, "D/y"))
	cp := mustPromote(t, s, "c2")
	logCP(t, "c2", cp)
	userFileStays(t, lower, "D/B/notes.txt", cp)
}

// A workspace file F replaced by a directory (rm F; mkdir F: opaque,
// "modified"; promotion makes the directory); the user moves B into F;
// the sandbox rm -rf F.
func TestUnseenMovedInFileReplacedByDirRmRf(t *testing.T) {
	b := oldUserDir(t)
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k", "F": "file"})
	put(t, upper, "F/x", "x")
	setOpq(t, upper, "F")
	logCP(t, "c1", mustPromote(t, s, "c1"))
	moveIn(t, b, lower, "F/B")
	rmrf(t, upper, "F")
	cp := mustPromote(t, s, "c2")
	logCP(t, "c2", cp)
	userFileStays(t, lower, "F/B/notes.txt", cp)
}

// A made dir N replaced by a file (call 2) and by a directory again
// (call 3); the user moves B in; rm -rf N.
func TestUnseenMovedInMadeDirFileDirAgain(t *testing.T) {
	b := oldUserDir(t)
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "N/a", "a")
	mustPromote(t, s, "c1")
	os.RemoveAll(filepath.Join(upper, "N"))
	put(t, upper, "N", "now a file")
	logCP(t, "c2", mustPromote(t, s, "c2"))
	os.Remove(filepath.Join(upper, "N"))
	put(t, upper, "N/c", "c")
	setOpq(t, upper, "N")
	logCP(t, "c3", mustPromote(t, s, "c3"))
	moveIn(t, b, lower, "N/B")
	rmrf(t, upper, "N")
	cp := mustPromote(t, s, "c4")
	logCP(t, "c4", cp)
	userFileStays(t, lower, "N/B/notes.txt", cp)
}

// After the held rm -rf N (its whiteout removed: the sandbox sees the
// workspace's N, B included: N is no longer sealed), the sandbox deletes
// B knowingly: the deletion is promoted.
func TestUnseenMadeStaleAfterHeldRemoval(t *testing.T) {
	b := oldUserDir(t)
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "N/a", "a")
	mustPromote(t, s, "c1")
	moveIn(t, b, lower, "N/B")
	rmrf(t, upper, "N")
	logCP(t, "c2", mustPromote(t, s, "c2"))
	listUpper(t, upper) // N gone from upper: the sandbox now sees lower N (and B)
	// The sandbox, seeing N/B, removes it: N copied up (plain, merged), whiteout N/B.
	if err := os.Mkdir(filepath.Join(upper, "N"), 0o755); err != nil {
		t.Fatal(err)
	}
	whiteout(t, upper, "N/B")
	cp := mustPromote(t, s, "c3")
	logCP(t, "c3", cp)
	if exists(filepath.Join(lower, "N/B/notes.txt")) {
		t.Errorf("the sandbox saw N/B (N merged again) and removed it; held: %v", heldRules(cp))
	}
}

// The sandbox writes N/B/f into the user's moved-in B: held (nothing of
// the sandbox's goes into a directory it never saw), then removes N/B (no
// whiteout: N is opaque). Nothing of the sandbox's is left in the
// workspace, and the user's files stay.
func TestUnseenSandboxFileInMovedInDirRemoved(t *testing.T) {
	b := oldUserDir(t)
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "N/a", "a")
	mustPromote(t, s, "c1")
	moveIn(t, b, lower, "N/B")
	put(t, upper, "N/B/f", "f")
	cp := mustPromote(t, s, "c2")
	logCP(t, "c2", cp)
	if heldRules(cp)["N/B/f"] != HazardConflict || exists(filepath.Join(lower, "N/B/f")) {
		t.Errorf("N/B/f, written into the user's unseen B, is not held: %v", heldRules(cp))
	}
	os.RemoveAll(filepath.Join(upper, "N/B"))
	cp = mustPromote(t, s, "c3")
	logCP(t, "c3", cp)
	if !exists(filepath.Join(lower, "N/B/notes.txt")) {
		t.Errorf("the user's notes were deleted")
	}
	if exists(filepath.Join(lower, "N/B/f")) {
		t.Errorf("the sandbox's N/B/f is in the workspace")
	}
}
