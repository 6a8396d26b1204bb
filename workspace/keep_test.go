package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKeepHoldsWithoutPromoting: a copy-mode stage decides each call's
// changes like rw promotion but writes nothing to the workspace: held
// changes leave the upper directory, allowed ones stay there and are not
// listed again until they change; the call that completes a git
// directory step by step is held; ListAll lists what apply would write.
func TestKeepHoldsWithoutPromoting(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"a.txt": "old"})
	s, err := OpenStage(upper, lower, state, func(rel string) (bool, string, bool) {
		return rel == "secret.txt", "files.write.deny[0]", false
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Keep = true
	put(t, upper, "a.txt", "new")
	put(t, upper, ".envrc", "touch /tmp/x")
	put(t, upper, "secret.txt", "x")
	put(t, upper, "src/objects/", "")
	cp := mustPromote(t, s, "1")
	held := heldRules(cp)
	if held[".envrc"] != HazardHostRun || held["secret.txt"] != "files.write.deny[0]" || held["a.txt"] != "" || held["src/objects"] != "" || !cp.Kept {
		t.Fatalf("decisions: %v (kept %v)", held, cp.Kept)
	}
	for _, p := range []string{".envrc", "secret.txt"} {
		if exists(filepath.Join(upper, p)) || exists(filepath.Join(lower, p)) {
			t.Errorf("held %s is still in the copy or reached the workspace", p)
		}
	}
	if !exists(filepath.Join(upper, "a.txt")) || readFile(filepath.Join(lower, "a.txt")) != "old" {
		t.Error("the allowed change left the copy or reached the workspace")
	}
	if cp := mustPromote(t, s, "2"); cp != nil {
		t.Errorf("kept changes listed again: %+v", cp.Changes)
	}
	put(t, upper, "src/refs/heads/", "")
	mustPromote(t, s, "3")
	put(t, upper, "src/HEAD", "ref: refs/heads/main\n")
	cp = mustPromote(t, s, "4")
	if heldRules(cp)["src/HEAD"] != HazardGitRepo || exists(filepath.Join(upper, "src/HEAD")) {
		t.Fatalf("HEAD completing a repository was not held: %+v", cp)
	}
	all, err := s.ListAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range all {
		got[c.Path] = c.Held
	}
	for _, p := range []string{"a.txt", "src/refs", "src/objects"} {
		if h, ok := got[p]; !ok || h != "" {
			t.Errorf("ListAll: %s = %q, %v (want allowed)", p, h, ok)
		}
	}
	if _, ok := got[".envrc"]; ok {
		t.Error("ListAll lists a held change")
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
