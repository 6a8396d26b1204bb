package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil/fsclock"
)

// The host edits the workspace between a call's decisions and its copies
// (a bulk call's copies go on while the model thinks, and the user or an
// MCP client's own tools act on the result): a file the call added that
// the host made meanwhile, and a file the call modified that the host
// edited or removed meanwhile, are held as conflicts, the host's version
// kept (found in review: the copy renamed over them).
func TestHostEditBetweenDecisionAndCopy(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"mod.txt": "user\n", "gone.txt": "user\n", "keep.txt": "k\n"})
	put(t, upper, "new.txt", "sandbox\n")
	put(t, upper, "mod.txt", "sandbox\n")
	put(t, upper, "gone.txt", "sandbox\n")
	put(t, upper, "ok.txt", "sandbox\n")
	cp, err := s.decideCall("c1")
	if err != nil || cp == nil {
		t.Fatalf("decideCall: %v, %v", cp, err)
	}
	if h := heldOf(cp.Changes); len(h) != 0 {
		t.Fatalf("held at the decisions: %v", h)
	}
	fsclock.Tick(t, lower)
	put(t, lower, "new.txt", "host\n")
	put(t, lower, "mod.txt", "host edit\n")
	if err := os.Remove(filepath.Join(lower, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	cp, err = s.promoteDecided(cp)
	if err != nil {
		t.Fatal(err)
	}
	held := heldRules(cp)
	for _, p := range []string{"new.txt", "mod.txt", "gone.txt"} {
		if held[p] != HazardConflict {
			t.Errorf("%s: held %q, want a conflict (held: %v)", p, held[p], held)
		}
	}
	for p, want := range map[string]string{"new.txt": "host\n", "mod.txt": "host edit\n", "ok.txt": "sandbox\n"} {
		if b, _ := os.ReadFile(filepath.Join(lower, p)); string(b) != want {
			t.Errorf("workspace %s: %q, want %q", p, b, want)
		}
	}
	if exists(filepath.Join(lower, "gone.txt")) {
		t.Error("gone.txt, removed on the host, came back")
	}
}

// A file that replaces a directory and turns out to be a gitdir: link is
// held with everything below the directory, in rw promotion too (where
// other files' gitdir: content is judged at the copy): found in review,
// the directory's entries were deleted before the copy held the file.
func TestGitdirFileOverDirectoryHoldsItsEntries(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"x/a.txt": "a\n", "x/sub/b.txt": "b\n"})
	put(t, upper, "x", "gitdir: /tmp/evil\n")
	cp := mustPromote(t, s, "c1")
	held := heldRules(cp)
	if held["x"] != HazardGitRepo {
		t.Errorf("x: held %q, want %s (held: %v)", held["x"], HazardGitRepo, held)
	}
	for _, p := range []string{"x/a.txt", "x/sub/b.txt"} {
		if !exists(filepath.Join(lower, p)) {
			t.Errorf("%s deleted from the workspace: the gitdir: file over its directory was held", p)
		}
	}
	if fi, err := os.Lstat(filepath.Join(lower, "x")); err != nil || !fi.IsDir() {
		t.Errorf("x in the workspace: %v, %v; want the user's directory", fi, err)
	}
}
