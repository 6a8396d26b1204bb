package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// Held changes that take an entry out of the upper directory at or
// above a sealed directory, or below one (found by an attacker's review:
// each made a later, unrelated call delete workspace files).

// W sealed (recreated); the sandbox replaces W by a symlink leaving the
// workspace: held, scrubbed out of upper (W is unsealed).
// The sandbox then sees the workspace's W (W/x included) on a fresh
// lookup; its next write into W must not delete W/x.
func TestHeldOutSymlinkOverSealedDirHeld(t *testing.T) {
	lower, upper, merged, s := overlayStage(t, map[string]string{"keep.txt": "k", "W/old": "o"})
	recreateSealed(t, s, merged, "W")
	sh(t, merged, `rm -rf W && ln -s /etc W`)
	heldThenWrite(t, s, lower, upper, "W", "W/x", "W/new")
}

// Same with a regular file replacing the sealed W, held as a conflict
// (the user chmods W on the host).
func TestHeldOutFileOverSealedDirHeld(t *testing.T) {
	lower, upper, merged, s := overlayStage(t, map[string]string{"keep.txt": "k", "W/old": "o"})
	recreateSealed(t, s, merged, "W")
	if err := os.Chmod(filepath.Join(lower, "W"), 0o700); err != nil {
		t.Fatal(err)
	}
	sh(t, merged, `rm -rf W && echo file > W`)
	heldThenWrite(t, s, lower, upper, "W", "W/x", "W/new")
}

// The parent P of a sealed W is replaced by a symlink leaving the
// workspace: held; the sandbox sees the workspace's P/W again.
func TestHeldOutSymlinkOverParentOfSealedHeld(t *testing.T) {
	lower, upper, merged, s := overlayStage(t, map[string]string{"keep.txt": "k", "P/W/old": "o", "P/k": "k"})
	recreateSealed(t, s, merged, "P/W")
	sh(t, merged, `rm -rf P && ln -s /etc P`)
	heldThenWrite(t, s, lower, upper, "P", "P/W/x", "P/W/new")
}

// D recreated (sealed), D/x a hidden directory below it. The sandbox's
// chmod of D/x is denied (held): D/x's upper copy is scrubbed out, so
// below the opaque D the sandbox no longer sees D/x at all. Its next,
// unrelated write in D must not delete the workspace's D/x (the sandbox
// never deleted it: it only chmodded it, and that was refused).
func TestHeldOutHeldChmodOfHiddenDir(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k", "D/x/f": "f", "D/z": "z"})
	merged := mountKernelOverlay(t, lower, upper)
	deny := false
	s, err := OpenStage(upper, lower, state, func(rel string) (bool, string, bool) {
		if deny && rel == "D/x" {
			return true, "files.write", true
		}
		return false, "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	sh(t, merged, `rm -rf D && mkdir -p D/x && echo f > D/x/f && echo g > D/x/g`)
	logCP(t, "c1", mustPromote(t, s, "c1"))
	t.Logf("D %+v D/x %+v", s.st.Promoted["D"], s.st.Promoted["D/x"])
	deny = true
	sh(t, merged, `chmod 700 D/x`)
	cp := mustPromote(t, s, "c2")
	logCP(t, "c2", cp)
	deny = false
	if h := heldRules(cp); h["D/x"] == "" {
		t.Fatalf("chmod D/x not held: %v", h)
	}
	merged = mountKernelOverlay(t, lower, upper)
	t.Logf("after the hold: sandbox sees D/x/f %v, workspace has it %v", exists(filepath.Join(merged, "D/x/f")), exists(filepath.Join(lower, "D/x/f")))
	sh(t, merged, `echo y > D/y`)
	logCP(t, "c3", mustPromote(t, s, "c3"))
	if !exists(filepath.Join(lower, "D/x/g")) {
		t.Errorf("the workspace lost D/x/g (the sandbox never deleted it; its refused chmod removed D/x from its view)")
	}
}

// heldThenWrite promotes call c2, whose change at held must be held;
// then, the sandbox looking the workspace up afresh, it must see keep,
// and the next call, writing write, must leave keep in the workspace
// (the sandbox saw it and never deleted it).
func heldThenWrite(t *testing.T, s *Stage, lower, upper, held, keep, write string) {
	t.Helper()
	cp := mustPromote(t, s, "c2")
	logCP(t, "c2", cp)
	if h := heldRules(cp); h[held] == "" {
		t.Fatalf("%s not held: %v", held, h)
	}
	merged := mountKernelOverlay(t, lower, upper)
	if !exists(filepath.Join(merged, keep)) {
		t.Fatalf("the sandbox does not see %s after a fresh lookup", keep)
	}
	sh(t, merged, "echo n > "+write)
	logCP(t, "c3", mustPromote(t, s, "c3"))
	if !exists(filepath.Join(lower, keep)) {
		t.Errorf("the workspace lost %s; the sandbox saw it before c3 and never deleted it", keep)
	}
}

// recreateSealed has the sandbox recreate dir (rm -rf, mkdir, dir/x) in
// call c1 and checks that promotion sealed it.
func recreateSealed(t *testing.T, s *Stage, merged, dir string) {
	t.Helper()
	sh(t, merged, "rm -rf "+dir+" && mkdir "+dir+" && echo x > "+dir+"/x")
	mustPromote(t, s, "c1")
	if !s.st.Promoted[dir].Sealed {
		t.Fatalf("the recreated %s is not sealed", dir)
	}
}
