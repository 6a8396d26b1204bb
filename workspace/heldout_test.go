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
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k", "W/old": "o"})
	merged := mountKernelOverlay(t, lower, upper)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, merged, `rm -rf W && mkdir W && echo x > W/x`)
	mustPromote(t, s, "c1")
	if !s.st.Promoted["W"].Sealed {
		t.Fatalf("W not sealed")
	}
	sh(t, merged, `rm -rf W && ln -s /etc W`)
	cp := mustPromote(t, s, "c2")
	logCP(t, "c2", cp)
	if h := heldRules(cp); h["W"] == "" {
		t.Fatalf("symlink W not held: %v", h)
	}
	merged = mountKernelOverlay(t, lower, upper)
	if !exists(filepath.Join(merged, "W/x")) {
		t.Fatalf("the sandbox does not see W/x after a fresh lookup")
	}
	sh(t, merged, `echo n > W/new`)
	logCP(t, "c3", mustPromote(t, s, "c3"))
	if !exists(filepath.Join(lower, "W/x")) {
		t.Errorf("the workspace lost W/x; the sandbox saw it before c3 and never deleted it")
	}
}

// Same with a regular file replacing the sealed W, held as a conflict
// (the user chmods W on the host).
func TestHeldOutFileOverSealedDirHeld(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k", "W/old": "o"})
	merged := mountKernelOverlay(t, lower, upper)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, merged, `rm -rf W && mkdir W && echo x > W/x`)
	mustPromote(t, s, "c1")
	if err := os.Chmod(filepath.Join(lower, "W"), 0o700); err != nil {
		t.Fatal(err)
	}
	sh(t, merged, `rm -rf W && echo file > W`)
	cp := mustPromote(t, s, "c2")
	logCP(t, "c2", cp)
	if h := heldRules(cp); h["W"] == "" {
		t.Fatalf("W not held: %v", h)
	}
	merged = mountKernelOverlay(t, lower, upper)
	if !exists(filepath.Join(merged, "W/x")) {
		t.Fatalf("the sandbox does not see W/x after a fresh lookup")
	}
	sh(t, merged, `echo n > W/new`)
	logCP(t, "c3", mustPromote(t, s, "c3"))
	if !exists(filepath.Join(lower, "W/x")) {
		t.Errorf("the workspace lost W/x; the sandbox saw it before c3 and never deleted it")
	}
}

// The parent P of a sealed W is replaced by a symlink leaving the
// workspace: held; the sandbox sees the workspace's P/W again.
func TestHeldOutSymlinkOverParentOfSealedHeld(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k", "P/W/old": "o", "P/k": "k"})
	merged := mountKernelOverlay(t, lower, upper)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, merged, `rm -rf P/W && mkdir P/W && echo x > P/W/x`)
	mustPromote(t, s, "c1")
	if !s.st.Promoted["P/W"].Sealed {
		t.Fatalf("P/W not sealed")
	}
	sh(t, merged, `rm -rf P && ln -s /etc P`)
	cp := mustPromote(t, s, "c2")
	logCP(t, "c2", cp)
	if h := heldRules(cp); h["P"] == "" {
		t.Fatalf("P not held: %v", h)
	}
	merged = mountKernelOverlay(t, lower, upper)
	if !exists(filepath.Join(merged, "P/W/x")) {
		t.Fatalf("the sandbox does not see P/W/x after a fresh lookup")
	}
	sh(t, merged, `echo n > P/W/new`)
	logCP(t, "c3", mustPromote(t, s, "c3"))
	if !exists(filepath.Join(lower, "P/W/x")) {
		t.Errorf("the workspace lost P/W/x; the sandbox saw it before c3 and never deleted it")
	}
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
