package main_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// gitRepo makes a host git repository with one commit.
func gitRepo(t *testing.T) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "README"), "hello\n", 0o644)
	hostGit(t, ws, "init", "-q")
	hostGit(t, ws, "config", "user.email", "me@example.com")
	hostGit(t, ws, "config", "user.name", "me")
	hostGit(t, ws, "add", ".")
	hostGit(t, ws, "commit", "-qm", "init")
	return ws
}

func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return string(out)
}

// gitStatusEverywhere runs the host's git status (and log) in every
// directory of the workspace, as a user or a shell prompt would: none
// may run anything the agent planted (the marker stays absent).
func gitStatusEverywhere(t *testing.T, ws, marker string) {
	t.Helper()
	_ = filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || strings.Contains(p, "/.git/") {
			return nil
		}
		for _, args := range [][]string{{"status", "--short"}, {"log", "--oneline", "-1"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = p
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
			_ = cmd.Run()
		}
		return nil
	})
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("host git ran the agent's command: %s exists", marker)
	}
}

// TestStagedGitDirAttacks: under the default policy, in rw mode, the
// agent builds git repositories under ordinary names (HEAD, config with
// core.fsmonitor, objects/, refs/) at several depths, behind read-only
// directories, at the bottom of a 600-deep chain, and plants host-run
// files and links out; host git then runs nothing of the agent's, the
// held files are absent from the workspace, and git add + commit inside
// reach the host repository while .git/config and hooks are held.
func TestStagedGitDirAttacks(t *testing.T) {
	testutil.RequireDocker(t)
	ws := gitRepo(t)
	marker := filepath.Join(t.TempDir(), "MARKER")
	cfg, plant := gitDirPlanter(marker)
	deep := strings.Repeat("d/", 600)
	script := filepath.Join(t.TempDir(), "script.yaml")
	writeFile(t, script, `turns:
  - tool_calls:
      - {name: write_file, args: {path: notes.txt, content: "first\n"}}
      - {name: write_file, args: {path: src/HEAD, content: "ref: refs/heads/main\n"}}
      - {name: write_file, args: {path: src/config, content: "`+cfg+`"}}
      - {name: write_file, args: {path: src/objects/.keep, content: ""}}
      - {name: write_file, args: {path: src/refs/heads/main, content: ""}}
  - tool_calls:
      - {name: execute_bash, args: {command: `+yamlQuote("python3 -c '"+pyEsc(plant("pkg/inner"))+"'; chmod 555 pkg/inner pkg")+`}}
      - {name: execute_bash, args: {command: `+yamlQuote("python3 -c '"+pyEsc(plant(deep+"x"))+"'")+`}}
      - {name: execute_bash, args: {command: `+yamlQuote(`python3 -c 'import os; open(".envrc","w").write("touch `+marker+`\n"); os.makedirs(".vscode", exist_ok=True); open(".vscode/tasks.json","w").write("{}"); os.symlink("/etc", "etc-link"); open("sub.git", "w").write("x"); os.makedirs("m", exist_ok=True); open("m/.git","w").write("gitdir: /tmp/elsewhere\n")'; chmod 555 .`)+`}}
  - tool_calls:
      - {name: execute_bash, args: {command: "chmod 755 . && echo work > work.txt && git add work.txt && git commit -qm 'agent work' && git log --oneline | head -2"}}
  - tool_calls:
      - {name: execute_bash, args: {command: `+yamlQuote(`python3 -c 'open(".git/config","a").write("`+cfg+`"); open(".git/hooks/post-checkout","w").write("#!/bin/sh\ntouch `+marker+`\n")'; chmod 755 .git/hooks/post-checkout`)+`}}
  - content: "done"
`, 0o644)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	ab := abCmd{fullEnv: baseEnv(t)}
	r := ab.run(t, "run", "--no-memory", "--workspace", ws, "--audit", log, "--script", script, "attack")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	gitStatusEverywhere(t, ws, marker)
	for _, p := range []string{"src/refs", "pkg/inner/refs", "pkg/inner/HEAD", ".envrc", ".vscode", "etc-link", "m/.git", deep + "x/HEAD"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("held %s reached the workspace", strings.TrimPrefix(p, deep))
		}
	}
	if out := hostGit(t, ws, "log", "--oneline"); !strings.Contains(out, "agent work") {
		t.Errorf("the sandbox's commit is not in the host repository:\n%s\n%s", out, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); strings.Contains(string(b), "fsmonitor") {
		t.Errorf(".git/config reached the workspace: %s", b)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "post-checkout")); err == nil {
		t.Error("a hook reached the workspace")
	}
	audit, _ := os.ReadFile(log)
	for _, want := range []string{`"event":"changes"`, `"action":"held"`, `hazard:git-repository`, `"sha256_before"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("audit log lacks %s", want)
		}
	}
	// The held changes are listed for review; rewind undoes the session.
	sess := sessionOf(t, r.stderr)
	st := ab.run(t, "changes", sess, "--held")
	if !strings.Contains(st.stdout, "HELD") || !strings.Contains(st.stdout, ".envrc") {
		t.Errorf("changes --held: %q %q", st.stdout, st.stderr)
	}
	// Fork: the workspace as it was after the first checkpoint.
	fork := filepath.Join(t.TempDir(), "fork")
	if fk := ab.run(t, "fork", sess, "1", fork, "--audit", log); fk.code != 0 {
		t.Fatalf("fork: %d %s", fk.code, fk.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(fork, "notes.txt")); err != nil || string(b) != "first\n" {
		t.Errorf("fork after checkpoint 1 lacks notes.txt: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(fork, "work.txt")); err == nil {
		t.Error("fork after checkpoint 1 has a later file")
	}
	// Rewind: back to the repository as it was before the session.
	if rw := ab.run(t, "rewind", sess, "1", "--audit", log); rw.code != 0 {
		t.Fatalf("rewind: %d %s", rw.code, rw.stderr)
	}
	if out := hostGit(t, ws, "log", "--oneline"); strings.Contains(out, "agent work") {
		t.Errorf("rewind left the agent's commit:\n%s", out)
	}
	for _, p := range []string{"src", "pkg", "work.txt", "notes.txt"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("rewind left %s", p)
		}
	}
}

func yamlQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// pyEsc puts a python program inside single quotes for sh.
func pyEsc(s string) string { return strings.ReplaceAll(s, `'`, `'\''`) }

// sessionOf finds the session id in a run's header.
func sessionOf(t *testing.T, stderr string) string {
	t.Helper()
	for _, f := range strings.Fields(stderr) {
		if len(f) == 32 && strings.Trim(f, "0123456789abcdef") == "" {
			return f
		}
	}
	t.Fatalf("no session id in %q", stderr)
	return ""
}

// TestStagedBackgroundWriter: with background: keep, a writer the agent
// leaves running keeps planting .envrc and a git directory after its
// call and after the last call; the final promotion, once the sandbox is
// gone, holds them all: nothing reaches the workspace.
func TestStagedBackgroundWriter(t *testing.T) {
	testutil.RequireDocker(t)
	ws := gitRepo(t)
	def, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "policy.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, pol, strings.Replace(string(def), "background: kill", "background: keep", 1), 0o644)
	script := filepath.Join(t.TempDir(), "script.yaml")
	writer := `python3 -c 'import os, time, subprocess
if os.fork() == 0:
    os.setsid()
    while True:
        os.makedirs("bg/objects", exist_ok=True); os.makedirs("bg/refs", exist_ok=True)
        open("bg/HEAD", "w").write("ref: refs/heads/main\n"); open(".envrc", "w").write("touch /tmp/x\n")
        time.sleep(0.05)
'`
	writeFile(t, script, "turns:\n  - tool_calls:\n      - {name: execute_bash, args: {command: "+yamlQuote(writer)+"}}\n  - tool_calls:\n      - {name: execute_bash, args: {command: \"sleep 1; echo later > later.txt\"}}\n  - content: done\n", 0o644)
	ab := abCmd{fullEnv: baseEnv(t)}
	// --approve allow: the writer is about staging, whatever exec-time
	// identification makes of python3.
	r := ab.run(t, "run", "--no-memory", "--approve", "allow", "--policy", pol, "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"), "--script", script, "keep a writer")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "later.txt")); err != nil {
		t.Fatalf("the ordinary change was not promoted: %v\n%s", err, r.stderr)
	}
	for _, p := range []string{".envrc", "bg/HEAD"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s (written by a kept background process) reached the workspace", p)
		}
	}
}

// gitDirPlanter returns a git config whose core.fsmonitor touches marker
// (host git running it leaves the marker) and plant, python that makes dir
// a git repository under an ordinary name: HEAD, objects/, refs/ and that
// config.
func gitDirPlanter(marker string) (cfg string, plant func(dir string) string) {
	cfg = `[core]\n\tfsmonitor = touch ` + marker + `\n`
	return cfg, func(dir string) string {
		return `import os
d = "` + dir + `"
os.makedirs(d + "/objects", exist_ok=True); os.makedirs(d + "/refs/heads", exist_ok=True)
open(d + "/HEAD", "w").write("ref: refs/heads/main\n")
open(d + "/config", "w").write("` + cfg + `")
`
	}
}
