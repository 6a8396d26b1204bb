package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// copyAttackScript is the attack of TestStagedGitDirAttacks for a copy:
// a git directory under an ordinary name (HEAD, config with
// core.fsmonitor, objects/, refs/) written into src/ by write_file, the
// same behind read-only directories and at the bottom of a 600-deep
// chain, .envrc, .vscode, a link out and a gitdir: file with the
// workspace itself made read-only, then (commit: true) a git commit and
// a change to .git/config and a hook.
func copyAttackScript(t *testing.T, marker string, commit bool) string {
	t.Helper()
	cfg, plant := gitDirPlanter(marker)
	deep := strings.Repeat("d/", 600)
	s := `turns:
  - tool_calls:
      - {name: write_file, args: {path: src/HEAD, content: "ref: refs/heads/main\n"}}
      - {name: write_file, args: {path: src/config, content: "` + cfg + `"}}
      - {name: write_file, args: {path: src/objects/.keep, content: ""}}
      - {name: write_file, args: {path: src/refs/heads/main, content: ""}}
  - tool_calls:
      - {name: execute_bash, args: {command: ` + yamlQuote("python3 -c '"+pyEsc(plant("pkg/inner"))+"'; chmod 555 pkg/inner pkg") + `}}
      - {name: execute_bash, args: {command: ` + yamlQuote("python3 -c '"+pyEsc(plant(deep+"x"))+"'") + `}}
      - {name: execute_bash, args: {command: ` + yamlQuote(`python3 -c 'import os; open(".envrc","w").write("touch `+marker+`\n"); os.makedirs(".vscode", exist_ok=True); open(".vscode/tasks.json","w").write("{}"); os.symlink("/etc", "etc-link"); os.makedirs("m", exist_ok=True); open("m/.git","w").write("gitdir: /tmp/elsewhere\n")'; chmod 555 .`) + `}}
`
	if commit {
		s += `  - tool_calls:
      - {name: execute_bash, args: {command: "chmod 755 . && echo work > work.txt && git add work.txt && git commit -qm 'agent work' && git log --oneline | head -2"}}
  - tool_calls:
      - {name: execute_bash, args: {command: ` + yamlQuote(`python3 -c 'open(".git/config","a").write("`+cfg+`"); open(".git/hooks/post-checkout","w").write("#!/bin/sh\ntouch `+marker+`\n")'; chmod 755 .git/hooks/post-checkout`) + `}}
`
	} else {
		s += `  - tool_calls:
      - {name: execute_bash, args: {command: "chmod 755 . && echo work > work.txt"}}
`
	}
	s += "  - content: done\n"
	p := filepath.Join(t.TempDir(), "script.yaml")
	writeFile(t, p, s, 0o644)
	return p
}

// copyHeldPaths are the attack's paths that must never reach the
// workspace (the deep chain's by its suffix).
var copyHeldPaths = []string{"src/refs", "pkg/inner/refs", "pkg/inner/HEAD", ".envrc", ".vscode", "etc-link", "m/.git", strings.Repeat("d/", 600) + "x/HEAD"}

func assertHeldAbsent(t *testing.T, ws string) {
	t.Helper()
	for _, p := range copyHeldPaths {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("held %s reached the workspace", p[max(0, len(p)-40):])
		}
	}
}

// TestCopyStagedAttacks: in copy mode, under the default policy, each
// call's changes are decided on the host: the attack's git directories,
// host-run files and links out are held (gone from the copy, alarmed,
// listed by changes --held) and the workspace is untouched; agentbox
// apply then writes the rest, the sandbox's commit included, and host
// git in every directory runs nothing of the agent's.
func TestCopyStagedAttacks(t *testing.T) {
	testutil.RequireDocker(t)
	ws := gitRepo(t)
	marker := filepath.Join(t.TempDir(), "MARKER")
	script := copyAttackScript(t, marker, true)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	ab := abCmd{fullEnv: baseEnv(t)}
	r := ab.run(t, "run", "--no-memory", "--workspace-mode", "copy", "--workspace", ws, "--audit", log, "--script", script, "attack")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "decided on the host") || !strings.Contains(r.stderr, "agentbox held") {
		t.Errorf("the header or the end does not say the copy is staged and what was held:\n%s", r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(ws, "work.txt")); err == nil {
		t.Fatal("copy mode wrote into the workspace before apply")
	}
	audit, _ := os.ReadFile(log)
	for _, want := range []string{`"event":"changes"`, `"action":"held"`, `hazard:git-repository`, `hazard:host-runs`, `kept in the copy`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("audit log lacks %s", want)
		}
	}
	sess := sessionOf(t, r.stderr)
	st := ab.run(t, "changes", sess, "--held")
	for _, want := range []string{"HELD", ".envrc", "src/refs", "pkg/inner/HEAD", "etc-link"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("changes --held lacks %s: %q %q", want, st.stdout, st.stderr)
		}
	}
	if rw := ab.run(t, "rewind", sess); rw.code == 0 {
		t.Errorf("rewind of a copy-mode session succeeded: %s", rw.stderr)
	}
	if a := ab.run(t, "apply", sess); a.code != 0 {
		t.Fatalf("apply: %d %s", a.code, a.stderr)
	}
	gitStatusEverywhere(t, ws, marker)
	assertHeldAbsent(t, ws)
	if b, err := os.ReadFile(filepath.Join(ws, "work.txt")); err != nil || string(b) != "work\n" {
		t.Errorf("the allowed change was not applied: %q %v", b, err)
	}
	if out := hostGit(t, ws, "log", "--oneline"); !strings.Contains(out, "agent work") {
		t.Errorf("the sandbox's commit is not in the host repository after apply:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); strings.Contains(string(b), "fsmonitor") {
		t.Errorf(".git/config reached the workspace: %s", b)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "post-checkout")); err == nil {
		t.Error("a hook reached the workspace")
	}
}

// TestBatchStagedAttacks: a batch task (copy mode) runs the same attack;
// its exported files and patch hold none of the held changes, and once
// the user copies the exported files into the workspace, host git in
// every directory runs nothing of the agent's.
func TestBatchStagedAttacks(t *testing.T) {
	testutil.RequireDocker(t)
	ws := gitRepo(t)
	marker := filepath.Join(t.TempDir(), "MARKER")
	script := copyAttackScript(t, marker, false)
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks.yaml")
	writeFile(t, tasks, "tasks:\n  - {id: attack, task: attack, workspace: "+ws+", script: "+script+"}\n", 0o644)
	out := filepath.Join(t.TempDir(), "results")
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, nil, "batch", tasks, "--output", out, "--audit", log, "--no-pool")
	if r.code != 0 {
		t.Fatalf("batch: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	files := filepath.Join(out, "attack", "files")
	if b, err := os.ReadFile(filepath.Join(files, "work.txt")); err != nil || string(b) != "work\n" {
		t.Fatalf("the allowed change was not exported: %q %v", b, err)
	}
	assertHeldAbsent(t, files)
	patch, _ := os.ReadFile(filepath.Join(out, "attack", "changes.patch"))
	for _, p := range []string{".envrc", "src/refs", "m/.git", "tasks.json"} {
		if strings.Contains(string(patch), p) {
			t.Errorf("the patch carries %s:\n%s", p, patch)
		}
	}
	audit, _ := os.ReadFile(log)
	for _, want := range []string{`"action":"held"`, `hazard:git-repository`, `hazard:host-runs`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("audit log lacks %s", want)
		}
	}
	// The user takes the task's files into the workspace.
	if b, err := exec.Command("cp", "-a", files+"/.", ws).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, b)
	}
	gitStatusEverywhere(t, ws, marker)
	assertHeldAbsent(t, ws)
}

// TestCopyApplyConflict: a file the user changed on the host after the
// session started, where the session changed it too, refuses the whole
// apply: nothing is written, the user's edit stays.
func TestCopyApplyConflict(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "a.txt"), "old\n", 0o644)
	script := filepath.Join(t.TempDir(), "s.yaml")
	writeFile(t, script, `turns:
  - tool_calls:
      - {name: write_file, args: {path: a.txt, content: "agent\n"}}
      - {name: write_file, args: {path: b.txt, content: "new\n"}}
  - content: done
`, 0o644)
	ab := abCmd{fullEnv: baseEnv(t)}
	r := ab.run(t, "run", "--no-memory", "--workspace-mode", "copy", "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--script", script, "edit")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	writeFile(t, filepath.Join(ws, "a.txt"), "mine\n", 0o644)
	if a := ab.run(t, "apply", sessionOf(t, r.stderr)); a.code == 0 || !strings.Contains(a.stderr, "a.txt") {
		t.Fatalf("apply over a host edit: %d %s", a.code, a.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "mine\n" {
		t.Errorf("the user's edit was overwritten: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); err == nil {
		t.Error("a refused apply wrote b.txt")
	}
}
