package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil/fsclock"
)

// The changes a pod brought back into a real copy (the Kubernetes
// backend's pull writes them into the tree) go through the same decisions
// as promotion: a git directory under an ordinary name, .envrc and a
// files.write deny are held (kept for review, gone from the tree), the
// rest is applied, and host git in every directory of the workspace runs
// nothing of the agent's.
func TestHoldPulledDecidesLikePromotion(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	src := filepath.Join(t.TempDir(), "ws")
	for p, c := range map[string]string{"src/main.go": "package main\n", "secret/key": "old\n", "README": "hi\n", ".envrc": "export A=1\n", "lnk/.envrc": "x\n"} {
		put(t, src, p, c)
	}
	if out, err := exec.Command("git", "-C", src, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	fsclock.Tick(t, src)
	store := Store{Dir: filepath.Join(t.TempDir(), "state", "work")}
	cp, err := NewCopy(store, src, CopyOptions{Session: "0123456789abcdef0123", NoOverlay: true, NoOverlayWhy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Remove() })
	marker := filepath.Join(t.TempDir(), "pwned")
	tree := cp.Tree()
	// What the pull wrote: the attack, a denied edit, allowed work.
	for p, c := range map[string]string{
		"src/HEAD": "ref: refs/heads/main\n", "src/config": "[core]\n\tfsmonitor = touch " + marker + "\n",
		"src/objects/": "", "src/refs/heads/": "", "src/objects/info/x": "",
		"pkg/.git": "gitdir: /tmp/elsewhere\n",
		".envrc":   "touch " + marker + "\n", "sub/.envrc": "touch " + marker + "\n",
		"secret/key": "stolen\n", "secret/new": "x\n",
		"src/main.go": "package main // edited\n", "added.txt": "new\n",
	} {
		put(t, tree, p, c)
	}
	if err := os.Remove(filepath.Join(tree, "README")); err != nil {
		t.Fatal(err)
	}
	// A directory replaced by a link out: restoring the held deletion
	// below it must not follow the link.
	outside := t.TempDir()
	if err := os.RemoveAll(filepath.Join(tree, "lnk")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(tree, "lnk")); err != nil {
		t.Fatal(err)
	}
	deny := func(rel string) (bool, string, bool) {
		if strings.HasPrefix(rel, "secret/") {
			return true, "files.write.deny[0]", false
		}
		return false, "files.write.allow[0]", false
	}
	held, err := cp.HoldPulled("end", deny)
	if err != nil {
		t.Fatal(err)
	}
	rules := heldRules(held)
	for p, want := range map[string]string{"src/HEAD": HazardGitRepo, "src/config": HazardGitRepo, "src/objects/info/x": HazardGitRepo,
		"pkg/.git": HazardGitRepo, ".envrc": HazardHostRun, "sub/.envrc": HazardHostRun,
		"secret/key": "files.write.deny[0]", "secret/new": "files.write.deny[0]"} {
		if rules[p] != want {
			t.Errorf("%s held by %q, want %q (held: %v)", p, rules[p], want, rules)
		}
	}
	if rules["lnk"] != HazardSymlink || rules["lnk/.envrc"] != HazardParent { // held with the link it sits below
		t.Errorf("link out or the deletion below it not held: %v", rules)
	}
	if exists(filepath.Join(outside, ".envrc")) {
		t.Fatal("restoring a held deletion followed a link out of the copy")
	}
	if rules["src/main.go"] != "" || rules["added.txt"] != "" || rules["README"] != "" {
		t.Errorf("allowed changes held: %v", rules)
	}
	// Kept for review, gone from the tree.
	if b, _ := os.ReadFile(filepath.Join(cp.StageDir(), "held", "1", "src", "config")); !strings.Contains(string(b), "fsmonitor") {
		t.Error("held src/config not kept for review")
	}
	cps, err := LoadCheckpoints(cp.StageDir())
	if err != nil || len(cps) != 1 || len(cps[0].HeldChanges()) != len(rules) {
		t.Fatalf("checkpoints on record: %v %+v", err, cps)
	}
	if exists(filepath.Join(tree, "src/HEAD")) || exists(filepath.Join(tree, "secret/new")) {
		t.Error("held additions still in the tree")
	}
	if b, _ := os.ReadFile(filepath.Join(tree, ".envrc")); string(b) != "export A=1\n" {
		t.Errorf("held .envrc edit: tree has %q, want the workspace's", b)
	}
	// A second decision finds nothing new (the tree is back where held).
	if again, err := cp.HoldPulled("again", deny); err != nil || again != nil {
		t.Fatalf("second decision: %v %+v", err, again)
	}
	changes, err := cp.Finish()
	if err != nil {
		t.Fatal(err)
	}
	got := summary(changes)
	for _, w := range []string{"src/main.go:modified", "added.txt:added", "README:deleted"} {
		if !strings.Contains(got, w) {
			t.Errorf("change list lacks %s: %s", w, got)
		}
	}
	for _, bad := range []string{"HEAD", "config", ".envrc", "secret", ".git"} {
		if strings.Contains(got, bad) {
			t.Errorf("change list carries %s: %s", bad, got)
		}
	}
	if err := cp.Apply(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "src/main.go")); !strings.Contains(string(b), "edited") {
		t.Error("allowed change not applied")
	}
	if b, _ := os.ReadFile(filepath.Join(src, "secret/key")); string(b) != "old\n" || exists(filepath.Join(src, "secret/new")) {
		t.Error("a files.write deny reached the workspace")
	}
	for _, p := range []string{"src/HEAD", "src/config", "pkg/.git", "sub/.envrc"} {
		if exists(filepath.Join(src, p)) {
			t.Errorf("held %s reached the workspace", p)
		}
	}
	gitStatusEverywhere(t, src, marker)
}

// gitStatusEverywhere runs host git status in every directory of dir and
// fails if marker appeared (something of the agent's ran).
func gitStatusEverywhere(t *testing.T, dir, marker string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			cmd := exec.Command("git", "status")
			cmd.Dir = p
			cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
			_ = cmd.Run()
		}
		return nil
	})
	if exists(marker) {
		t.Fatalf("host git status ran the agent's command (%s exists)", marker)
	}
}
