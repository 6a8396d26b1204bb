package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil/fsclock"
)

// sixChanges makes the six kinds of change of the scripted
// session below dir: an edit, an append, a deletion, an addition, a mode
// change and a rewrite (a new file renamed over the old one, as write_file
// does), plus a symlink retarget and a .git entry.
func sixChanges(t testing.TB, dir string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "edit.txt"), []byte("EDITED\n"), 0o644))
	f, err := os.OpenFile(filepath.Join(dir, "src", "append.txt"), os.O_APPEND|os.O_WRONLY, 0)
	must(err)
	_, err = f.WriteString("appended\n")
	must(err)
	must(f.Close())
	must(os.Remove(filepath.Join(dir, "src", "gone.txt")))
	must(os.WriteFile(filepath.Join(dir, "src", "new.txt"), []byte("new\n"), 0o644))
	must(os.Chmod(filepath.Join(dir, "run.sh"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "rewrite.txt.tmp"), []byte("rewritten\n"), 0o644))
	must(os.Rename(filepath.Join(dir, "rewrite.txt.tmp"), filepath.Join(dir, "rewrite.txt")))
	must(os.Remove(filepath.Join(dir, "link")))
	must(os.Symlink("edit.txt", filepath.Join(dir, "link")))
	must(os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/heads/other\n"), 0o644))
}

// wantSix is what sixChanges must be reported as.
const wantSix = ".git/HEAD:modified edit.txt:modified link:modified rewrite.txt:modified run.sh:mode src/append.txt:modified src/gone.txt:deleted src/new.txt:added"

// sixBase writes the workspace sixChanges works on, with n extra files.
func sixBase(t testing.TB, dir string, n int) {
	t.Helper()
	files := map[string]string{"edit.txt": "edit\n", "src/append.txt": "line\n", "src/gone.txt": "gone\n",
		"run.sh": "#!/bin/sh\necho hi\n", "rewrite.txt": "old\n", ".git/HEAD": "ref: refs/heads/main\n"}
	for p, body := range files {
		writeFile(t, filepath.Join(dir, p), body)
	}
	if err := os.Symlink("run.sh", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	GenerateTree(t, filepath.Join(dir, "gen"), n)
	fsclock.Tick(t, dir)
}

func summary(changes []audit.FileChange) string {
	var got []string
	for _, c := range changes {
		got = append(got, c.Path+":"+c.Change)
	}
	sort.Strings(got)
	return strings.Join(got, " ")
}

// TestSnapshotDiffSixKinds: rw mode's stat snapshots report all six kinds
// of change, symlinks and .git entries, and hash only what changed.
func TestSnapshotDiffSixKinds(t *testing.T) {
	dir := t.TempDir()
	sixBase(t, dir, 200)
	before, err := Snapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	sixChanges(t, dir)
	after, _ := Snapshot(dir)
	changes := Diff(before, after)
	if got := summary(changes); got != wantSix {
		t.Errorf("diff =\n %s\nwant\n %s", got, wantSix)
	}
	for _, c := range changes {
		if c.Change != audit.ChangeDeleted && c.SHA256 == "" {
			t.Errorf("%s not hashed", c.Path)
		}
	}
	if audit.Incomplete(changes) != "" {
		t.Errorf("complete diff marked incomplete")
	}
}

// TestSnapshotBoundSaysIncomplete: a bound reached is never silent.
func TestSnapshotBoundSaysIncomplete(t *testing.T) {
	dir := t.TempDir()
	sixBase(t, dir, 30)
	lim := SnapshotLimits{MaxEntries: 10, MaxHashBytes: 1 << 20}
	before, _ := SnapshotWith(dir, lim)
	after, _ := SnapshotWith(dir, lim)
	changes := Diff(before, after)
	if why := audit.Incomplete(changes); !strings.Contains(why, "more than 10 entries") {
		t.Fatalf("want an incomplete marker, got %v", changes)
	}
	if err := ApplyChanges(dir, dir, false, 0, changes); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("an incomplete list was applied: %v", err)
	}
	h := SnapshotLimits{MaxEntries: 1000, MaxHashBytes: 1}
	b2, _ := SnapshotWith(dir, h)
	writeFile(t, filepath.Join(dir, "edit.txt"), "a longer edit\n")
	a2, _ := SnapshotWith(dir, h)
	if why := audit.Incomplete(Diff(b2, a2)); !strings.Contains(why, "to hash") {
		t.Errorf("hash bound not reported: %q", why)
	}
}

// TestApplyRefusesHostExecutedFiles: a hook or git config written in a copy
// is never applied to the host (nor anything else of that change set).
func TestApplyRefusesHostExecutedFiles(t *testing.T) {
	for _, p := range []string{".git/hooks/pre-commit", ".git/config", "sub/.git/hooks/post-checkout", "lib/.envrc", ".git/modules/m/config"} {
		src, from := t.TempDir(), t.TempDir()
		writeFile(t, filepath.Join(from, p), "#!/bin/sh\ntouch /tmp/pwned\n")
		writeFile(t, filepath.Join(from, "ok.txt"), "ok\n")
		changes := []audit.FileChange{{Path: p, Change: audit.ChangeAdded}, {Path: "ok.txt", Change: audit.ChangeAdded}}
		err := ApplyChanges(src, from, false, 0, changes)
		if !errors.Is(err, ErrGuarded) {
			t.Errorf("%s: %v", p, err)
		}
		if _, err := os.Lstat(filepath.Join(src, "ok.txt")); err == nil {
			t.Errorf("%s: part of a refused change set was applied", p)
		}
	}
	if hostExecuted(".git/HEAD") || hostExecuted("src/config") || hostExecuted("git/hooks/x") {
		t.Errorf("over-broad guard")
	}
}
