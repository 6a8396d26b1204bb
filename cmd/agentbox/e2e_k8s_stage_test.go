package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// On Kubernetes the pod's copy is the staging layer: the changes that
// come back go through the decisions of promotion. A git directory under
// an ordinary name (HEAD, config with core.fsmonitor, objects/, refs/ in
// src/, and behind a read-only directory) and .envrc are held (listed
// by changes --held, alarms in the audit log, absent from the copy's
// change list); files.write (a deny, a path outside the allow list) is
// honoured; after apply,
// host git in every directory runs nothing of the agent's.
func TestK8sPulledChangesDecided(t *testing.T) {
	env := k8sEnv(t)
	ws := gitRepo(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "MARKER")
	pol, script, log := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "s.yaml"), filepath.Join(dir, "a.jsonl")
	writeTestFile(t, pol, `version: 1
extends: none
commands:
  default: allow
  dynamic: allow
files:
  read:
    allow: ["**"]
  write:
    allow: ["src/**", "pkg/**", "ok.txt", "locked/**"]
    deny: ["locked/**"]
`)
	cfg := `[core]\n\tfsmonitor = touch ` + marker + `\n`
	py := `import os
for d in ["src", "pkg/inner"]:
    os.makedirs(d + "/objects", exist_ok=True); os.makedirs(d + "/refs/heads", exist_ok=True)
    open(d + "/HEAD", "w").write("ref: refs/heads/main\n")
    open(d + "/config", "w").write("` + cfg + `")
open(".envrc", "w").write("touch ` + marker + `\n")
open("outside.txt", "w").write("not allowed\n")
open("ok.txt", "w").write("fine\n")
os.makedirs("locked", exist_ok=True); open("locked/secret", "w").write("x\n")
os.chmod("pkg/inner", 0o555)
`
	writeTestFile(t, script, `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: `+yamlQuote("python3 -c '"+pyEsc(py)+"'; echo done")+`}}
  - content: planted
`)
	ab := abCmd{fullEnv: env}
	r := ab.run(t, "run", "--no-memory", "--policy", pol, "--workspace", ws, "--audit", log, "--script", script, "plant")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	m := sessionRe.FindStringSubmatch(r.stderr)
	if m == nil || !strings.Contains(r.stderr, "agentbox held") {
		t.Fatalf("no pending session or held notice in %q", r.stderr)
	}
	held := ab.run(t, "changes", "--held", m[1])
	for _, want := range []string{"src/HEAD", "src/config", "pkg/inner/HEAD", ".envrc", "hazard:git-repository"} {
		if !strings.Contains(held.stdout, want) {
			t.Errorf("changes --held lacks %s:\n%s", want, held.stdout)
		}
	}
	st := ab.run(t, "changes", "--stat", m[1])
	if !strings.Contains(st.stdout, "ok.txt") {
		t.Errorf("the allowed change is not pending:\n%s", st.stdout)
	}
	for _, bad := range []string{"HEAD", "config", ".envrc", "outside.txt", "locked"} {
		if strings.Contains(st.stdout, bad) {
			t.Errorf("the change list carries %s:\n%s", bad, st.stdout)
		}
	}
	if a := ab.run(t, "apply", m[1]); a.code != 0 {
		t.Fatalf("apply: %d %s", a.code, a.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "ok.txt")); string(b) != "fine\n" {
		t.Errorf("ok.txt not applied: %q", b)
	}
	gitStatusEverywhere(t, ws, marker)
	for _, p := range []string{"src/HEAD", "src/config", "pkg/inner/HEAD", "pkg/inner/config", ".envrc", "outside.txt", "locked/secret"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("held %s reached the workspace", p)
		}
	}
	audit, _ := os.ReadFile(log)
	for _, want := range []string{`"action":"held"`, `"path":"src/config"`, `"path":".envrc"`, `"rule":"files.write.deny[0]"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("audit log lacks %s", want)
		}
	}
}
