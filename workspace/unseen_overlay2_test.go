package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Through a real kernel overlay: the sandbox recreates D (rm -rf D, so D
// is opaque) and makes the directory D/x where the workspace had a file
// x (below the opaque D the kernel makes D/x a plain directory, not
// opaque: promotion marks it, sealed). The files the sandbox then removes
// in D/x leave the workspace too (found by an attacker's review: they
// stayed, and the two views differed).
func TestFileToDirBelowRecreatedDeletions(t *testing.T) {
	lower, _, merged, s := overlayStage(t, map[string]string{"D/x": "file", "D/y": "y"})
	sh(t, merged, `rm -rf D && mkdir -p D/x && echo 1 > D/x/f && echo 1 > D/x/g`)
	if h := heldRules(mustPromote(t, s, "c1")); len(h) != 0 {
		t.Fatalf("c1 held: %v", h)
	}
	sh(t, merged, `rm D/x/f`)
	cp := mustPromote(t, s, "c2")
	logCP(t, "c2", cp)
	if exists(filepath.Join(lower, "D/x/f")) {
		t.Errorf("rm D/x/f: the workspace still has D/x/f (the sandbox does not: %v)", exists(filepath.Join(merged, "D/x/f")))
	}
	sh(t, merged, `rm -rf D/x && mkdir D/x`)
	cp = mustPromote(t, s, "c3")
	logCP(t, "c3", cp)
	if exists(filepath.Join(lower, "D/x/g")) {
		t.Errorf("rm -rf D/x && mkdir D/x: the workspace still has D/x/g (the sandbox does not: %v)", exists(filepath.Join(merged, "D/x/g")))
	}
}

// Through a real kernel overlay: the sandbox recreates D (sealed); the
// user moves their old directory B into D on the host; the sandbox
// recreates D again and, not seeing B, makes a directory D/B of its own
// (npm ci twice, B a package name). Its write into D/B is held ("never
// saw"), and the user's D/B is not recorded as a hidden directory of the
// sandbox's: the sandbox's next rm -rf D leaves the user's files (found by
// an attacker's review: they were deleted).
func TestRecreateOverMovedInDirNotRecorded(t *testing.T) {
	for _, rm := range []string{"rm -rf D"} {
		t.Run(strings.ReplaceAll(rm, "/", "_"), func(t *testing.T) {
			b := oldUserDir(t)
			lower, _, merged, s := overlayStage(t, map[string]string{"D/x": "x", "keep.txt": "k"})
			sh(t, merged, `rm -rf D && mkdir D && echo y > D/y`)
			if h := heldRules(mustPromote(t, s, "c1")); len(h) != 0 {
				t.Fatalf("c1 held: %v", h)
			}
			if err := os.Rename(b, filepath.Join(lower, "D/B")); err != nil {
				t.Fatal(err)
			}
			sh(t, merged, `rm -rf D && mkdir -p D/B && echo sandbox > D/B/other.txt`)
			cp := mustPromote(t, s, "c2")
			logCP(t, "c2", cp)
			sh(t, merged, rm)
			cp = mustPromote(t, s, "c3")
			logCP(t, "c3", cp)
			for _, c := range changesOf(cp) {
				if c.Path == "D/B/notes.txt" && c.Held == "" {
					t.Errorf("%s: the deletion of the user's D/B/notes.txt (never seen by the sandbox) is allowed (%s)", rm, c.Change)
				}
			}
			for _, p := range []string{"D/B/notes.txt", "D/B/sub/deep.txt"} {
				if !exists(filepath.Join(lower, p)) {
					t.Errorf("%s: the user's %s (moved in, never seen by the sandbox) was deleted", rm, p)
				}
			}
		})
	}
}

// Through a real kernel overlay: a directory recorded for a mode change
// (call 1) lies below one the sandbox then recreates (call 2): it is
// sealed from then on, and a deletion in it (no whiteout) reaches the
// workspace (call 3).
func TestRecordedDirBelowRecreatedSealed(t *testing.T) {
	lower, _, merged, s := overlayStage(t, map[string]string{"P/X/old": "o", "P/X/keep": "k"})
	sh(t, merged, `chmod 700 P/X`)
	mustPromote(t, s, "c1")
	sh(t, merged, `cp -a P /tmp/.agentbox-p-$$ && rm -rf P && mv /tmp/.agentbox-p-$$ P`)
	if h := heldRules(mustPromote(t, s, "c2")); len(h) != 0 {
		t.Fatalf("c2 held: %v", h)
	}
	sh(t, merged, `rm P/X/old`)
	if h := heldRules(mustPromote(t, s, "c3")); len(h) != 0 {
		t.Fatalf("c3 held: %v", h)
	}
	if exists(filepath.Join(lower, "P/X/old")) {
		t.Errorf("rm P/X/old: the workspace still has it (the sandbox does not: %v)", exists(filepath.Join(merged, "P/X/old")))
	}
	if !exists(filepath.Join(lower, "P/X/keep")) {
		t.Errorf("P/X/keep is gone from the workspace")
	}
}

// Through a real kernel overlay: the sandbox recreates W (sealed); the
// user chmods W on the host; the sandbox recreates W again: held (a
// conflict), its upper copy taken out, so the sandbox sees the
// workspace's W again, W/x included, once it looks W up afresh. W is no
// longer sealed: its next call, which leaves W/x alone, deletes nothing
// (found by a review: W/x was deleted).
func TestHeldRecreateUnseals(t *testing.T) {
	lower, upper, merged, s := overlayStage(t, map[string]string{"keep.txt": "k", "W/old": "o"})
	recreateSealed(t, s, merged, "W")
	if err := os.Chmod(filepath.Join(lower, "W"), 0o700); err != nil {
		t.Fatal(err)
	}
	// The new W made before the old one goes: rm -rf W && mkdir W
	// may give the new W the old one's inode number, and a directory of
	// the same identity and mode is the same directory to promotion (its
	// entries' changes are promoted, the host's chmod stands; 2 runs in
	// 20 failed this test so).
	sh(t, merged, `mkdir W.new && echo y > W.new/y && rm -rf W && mv W.new W`)
	if h := heldRules(mustPromote(t, s, "c2")); h["W"] != HazardConflict {
		t.Fatalf("the recreation of W, changed on the host, is not held: %v", h)
	}
	merged = mountKernelOverlay(t, lower, upper) // a fresh lookup
	sh(t, merged, `echo n > W/new`)
	logCP(t, "c3", mustPromote(t, s, "c3"))
	if !exists(filepath.Join(lower, "W/x")) {
		t.Errorf("the workspace lost W/x; the sandbox sees it: %v", exists(filepath.Join(merged, "W/x")))
	}
}
