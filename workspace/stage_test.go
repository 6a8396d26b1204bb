package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil/fsclock"

	"golang.org/x/sys/unix"
)

// stageDirs makes a workspace (lower), an upper directory and a state
// directory; files maps workspace paths to contents.
func stageDirs(t *testing.T, files map[string]string) (lower, upper, state string) {
	t.Helper()
	base := t.TempDir()
	lower, upper, state = filepath.Join(base, "ws"), filepath.Join(base, "upper"), filepath.Join(base, "state")
	for _, d := range []string{lower, upper} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range files {
		put(t, lower, p, c)
	}
	fsclock.Tick(t, base)
	return lower, upper, state
}

func put(t *testing.T, root, p, content string) {
	t.Helper()
	full := filepath.Join(root, p)
	if strings.HasSuffix(p, "/") {
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func whiteout(t *testing.T, root, p string) {
	t.Helper()
	full := filepath.Join(root, p)
	_ = os.MkdirAll(filepath.Dir(full), 0o755)
	if err := unix.Mknod(full, unix.S_IFCHR, 0); err != nil {
		t.Skipf("cannot make a whiteout (needs root): %v", err)
	}
}

func mustPromote(t *testing.T, s *Stage, call string) *Checkpoint {
	t.Helper()
	cp, err := s.Promote(call)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func heldRules(cp *Checkpoint) map[string]string {
	out := map[string]string{}
	if cp == nil {
		return out
	}
	for _, c := range cp.HeldChanges() {
		out[c.Path] = c.Held
	}
	return out
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func TestPromoteAddEditDelete(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"a.txt": "old", "gone.txt": "x", "keep/k": "k"})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, upper, "a.txt", "new")
	put(t, upper, "dir/b.txt", "b")
	whiteout(t, upper, "gone.txt")
	cp := mustPromote(t, s, "call-1")
	if len(cp.HeldChanges()) != 0 {
		t.Fatalf("held: %+v", cp.HeldChanges())
	}
	if b, _ := os.ReadFile(filepath.Join(lower, "a.txt")); string(b) != "new" {
		t.Fatalf("a.txt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(lower, "dir/b.txt")); string(b) != "b" {
		t.Fatalf("dir/b.txt = %q", b)
	}
	if exists(filepath.Join(lower, "gone.txt")) {
		t.Fatal("gone.txt still in the workspace")
	}
	for _, c := range cp.Changes {
		if c.Path == "a.txt" && (c.Before == "" || c.After == "" || c.Before == c.After) {
			t.Fatalf("sums of a.txt: %+v", c)
		}
	}
	// Nothing new: nothing listed, no checkpoint.
	if cp := mustPromote(t, s, "call-2"); cp != nil {
		t.Fatalf("second promotion listed %+v", cp.Changes)
	}
	// Edited again in the upper: listed again.
	put(t, upper, "a.txt", "newer")
	if cp := mustPromote(t, s, "call-3"); cp == nil || len(cp.Promoted()) != 1 {
		t.Fatalf("third promotion: %+v", cp)
	}
}

// The git-directory-under-an-ordinary-name attack and its variants are
// held, whatever their names and depth; the workspace's own repository
// takes objects, refs and the index but never config or hooks.
func TestPromoteHoldsHostHazards(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "", ".git/objects/": "", ".git/refs/heads/": ""})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	attack := map[string]string{
		"src/HEAD": "ref: refs/heads/main\n", "src/config": "[core]\n\tfsmonitor = touch /tmp/marker\n",
		"src/objects/x": "", "src/refs/heads/main": "",
		"a/b/c/d/HEAD": "ref: refs/heads/x\n", "a/b/c/d/commondir": "../..",
		"HEAD": "x", "objects/o": "", "refs/r": "",
		"pkg/.git": "gitdir: /tmp/elsewhere\n", "other/link": "gitdir: ../x\n",
		"sub/.git/config": "", ".envrc": "echo pwned", ".vscode/tasks.json": "{}",
		"deep/x/.pre-commit-config.yaml": "", "agentbox.yaml": "",
		".git/config": "[core]\n\thooksPath = /tmp\n", ".git/hooks/pre-commit": "#!/bin/sh\n",
		".git/info/attributes": "", ".git/objects/info/alternates": "/tmp",
		".git/objects/ab/cdef": "blob", ".git/refs/heads/main": "0123", ".git/index": "idx",
		"ok/file.go": "package ok",
	}
	for p, c := range attack {
		put(t, upper, p, c)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(upper, "abs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside", filepath.Join(upper, "ok", "rel")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("file.go", filepath.Join(upper, "ok", "inside")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(upper, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	put(t, upper, "suid", "x")
	if err := os.Chmod(filepath.Join(upper, "suid"), 0o4755); err != nil {
		t.Fatal(err)
	}
	cp := mustPromote(t, s, "call-1")
	held := heldRules(cp)
	promoted := map[string]bool{"ok/file.go": true, "ok/inside": true, ".git/objects/ab/cdef": true,
		".git/refs/heads/main": true, ".git/index": true, "suid": true}
	for p := range attack {
		if promoted[p] {
			if held[p] != "" {
				t.Errorf("%s held (%s), want promoted", p, held[p])
			}
			continue
		}
		if exists(filepath.Join(lower, p)) && p != ".git/config" {
			t.Errorf("%s reached the workspace", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(lower, ".git/config")); len(b) != 0 {
		t.Errorf(".git/config changed: %q", b)
	}
	for _, p := range []string{"abs", "ok/rel", "fifo", "src/HEAD", "src/config", "src/objects", "src/refs", "a/b/c/d/HEAD", "a/b/c/d/commondir", "HEAD", "objects", "refs", "pkg/.git", "other/link", ".envrc", ".vscode", ".git/hooks", ".git/config"} {
		if held[p] == "" {
			t.Errorf("%s not held; held: %v", p, held)
		}
	}
	for p := range promoted {
		if !exists(filepath.Join(lower, p)) {
			t.Errorf("%s not promoted", p)
		}
	}
	if fi, _ := os.Stat(filepath.Join(lower, "suid")); fi == nil || fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("set-id bit came out: %v", fi)
	}
	// Held entries left the upper (the sandbox no longer sees them) and
	// are kept for review.
	if exists(filepath.Join(upper, "src/config")) || !exists(filepath.Join(state, "held/1/src/config")) {
		t.Error("held src/config not moved out of the upper directory")
	}
	for d := range map[string]bool{"src": true, "a/b/c/d": true, ".": true} {
		if exists(filepath.Join(lower, d, "HEAD")) && exists(filepath.Join(lower, d, "refs")) && d != "." {
			t.Errorf("%s is a git directory on the host", d)
		}
	}
}

func TestPromoteStepwiseGitDir(t *testing.T) {
	// HEAD, then objects/, then refs/, one call each: the call that would
	// complete the repository is held.
	lower, upper, state := stageDirs(t, nil)
	s, _ := OpenStage(upper, lower, state, nil)
	put(t, upper, "src/HEAD", "ref: refs/heads/main\n")
	mustPromote(t, s, "1")
	put(t, upper, "src/objects/", "")
	mustPromote(t, s, "2")
	put(t, upper, "src/refs/heads/", "")
	cp := mustPromote(t, s, "3")
	if heldRules(cp)["src/refs"] != HazardGitRepo || exists(filepath.Join(lower, "src/refs")) {
		t.Fatalf("refs/ completing a repository was not held: %+v", cp)
	}
}

func TestPromoteConflictAndPolicy(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"c.txt": "host", "secret/k": "k"})
	deny := func(rel string) (bool, string, bool) {
		if strings.HasPrefix(rel, "secret") {
			return true, "files.write.deny[0]", false
		}
		return false, "", false
	}
	s, _ := OpenStage(upper, lower, state, deny)
	put(t, lower, "c.txt", "host edit") // the user edits after the session started
	put(t, upper, "c.txt", "agent edit")
	put(t, upper, "secret/k", "agent")
	cp := mustPromote(t, s, "1")
	held := heldRules(cp)
	if held["c.txt"] != HazardConflict || held["secret/k"] != "files.write.deny[0]" {
		t.Fatalf("held: %v", held)
	}
	if b, _ := os.ReadFile(filepath.Join(lower, "c.txt")); string(b) != "host edit" {
		t.Fatalf("conflict overwrote the user's edit: %q", b)
	}
}

// newStage is stageDirs with files in the workspace, and the stage over
// them opened.
func newStage(t *testing.T, files map[string]string) (lower, upper string, s *Stage) {
	t.Helper()
	lower, upper, state := stageDirs(t, files)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	return lower, upper, s
}

// stageWithLinkOut is newStage with the user's own link out of the
// workspace at the path elems name (to a new directory, outside), made
// before the session started.
func stageWithLinkOut(t *testing.T, files map[string]string, elems ...string) (outside, lower, upper string, s *Stage) {
	t.Helper()
	outside = t.TempDir()
	lower, upper, state := stageDirs(t, files)
	if err := os.Symlink(outside, filepath.Join(append([]string{lower}, elems...)...)); err != nil {
		t.Fatal(err)
	}
	fsclock.Tick(t, filepath.Dir(lower))
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	return outside, lower, upper, s
}
