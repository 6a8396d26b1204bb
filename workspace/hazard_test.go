package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A venv made with symlinks: bin/python3 -> /usr/bin/python3 is held (it
// leaves the workspace) and the reason names the target and the fix;
// bin/python -> python3 stays inside and is promoted; a copied
// interpreter is an ordinary file.
func TestHeldSymlinkSaysTheFix(t *testing.T) {
	lower, upper, state := stageDirs(t, nil)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, upper, ".venv/bin/python3.11", "\x7fELF a copy")
	if err := os.Symlink("/usr/bin/python3", filepath.Join(upper, ".venv/bin/python3")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("python3", filepath.Join(upper, ".venv/bin/python")); err != nil {
		t.Fatal(err)
	}
	cp := mustPromote(t, s, "call-1")
	var why string
	for _, c := range cp.HeldChanges() {
		if c.Path == ".venv/bin/python3" {
			why = c.Why
		}
	}
	if held := heldRules(cp); len(held) != 1 || held[".venv/bin/python3"] != HazardSymlink {
		t.Fatalf("held: %v", held)
	}
	if !strings.Contains(why, `"/usr/bin/python3"`) || !strings.Contains(why, "python3 -m venv --copies") {
		t.Errorf("why: %q", why)
	}
	if exists(filepath.Join(lower, ".venv/bin/python3")) || !exists(filepath.Join(lower, ".venv/bin/python3.11")) || !exists(filepath.Join(lower, ".venv/bin/python")) {
		t.Error("the outside symlink reached the workspace, or the rest did not")
	}
	if w := symlinkWhy(strings.Repeat("\x1b[2J", 40)); strings.Contains(w, "\x1b") || len(w) > 300 {
		t.Errorf("an agent's target is not quoted and cut: %q", w)
	}
}
