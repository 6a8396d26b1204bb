package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExplicitLiftsOnlyPathHazards: an allow rule that names a path
// lifts the catalogue's hazard of that path (.envrc written as a file is
// promoted), never what the change is: a link out at a named path, and
// a gitdir: file at a named path, stay held and absent.
func TestExplicitLiftsOnlyPathHazards(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"keep.txt": "k"})
	s, err := OpenStage(upper, lower, state, func(rel string) (bool, string, bool) {
		switch rel {
		case ".envrc", "notes.txt", "link.txt", "sub/.envrc":
			return false, "files.write.allow[0]", true
		}
		return false, "files.write.allow[1]", false
	})
	if err != nil {
		t.Fatal(err)
	}
	put(t, upper, ".envrc", "export A=1\n")
	put(t, upper, "notes.txt", "gitdir: /etc\n")
	if err := os.Symlink("/etc/passwd", filepath.Join(upper, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(upper, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside", filepath.Join(upper, "sub", ".envrc")); err != nil {
		t.Fatal(err)
	}
	cp, err := s.Promote("call_1")
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{}
	for _, c := range cp.Changes {
		held[c.Path] = c.Held
	}
	if held[".envrc"] != "" {
		t.Errorf(".envrc named by an allow rule was held: %q", held[".envrc"])
	}
	for _, p := range []string{"notes.txt", "link.txt", "sub/.envrc"} {
		if held[p] == "" {
			t.Errorf("%s was promoted because an allow rule names it", p)
		}
		if _, err := os.Lstat(filepath.Join(lower, p)); err == nil {
			t.Errorf("%s is in the workspace", p)
		}
	}
}
