package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
	"mvdan.cc/sh/v3/shell"
)

const forkPolicy = `version: 1
extends: none
commands:
  default: allow
  dynamic: allow
files:
  read:
    allow: ["**"]
  write:
    allow: ["**"]
    deny: ["locked.txt"]
`

// fork SESSION CALL with a task starts a copy-mode session on the
// workspace as it was after that checkpoint, with the policy the first
// session ran with; the fork is recorded with the source session and
// call. Without a task it only writes the directory and prints the exact
// run command; a policy changed since is refused.
func TestForkStartsCopySession(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	writeTestFile(t, filepath.Join(ws, "a.txt"), "v0\n")
	writeTestFile(t, filepath.Join(ws, "locked.txt"), "locked\n")
	pol, log := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.jsonl")
	writeTestFile(t, pol, forkPolicy)
	first := filepath.Join(dir, "first.yaml")
	writeTestFile(t, first, `turns:
  - tool_calls:
      - {name: write_file, args: {path: a.txt, content: "v1\n"}}
  - tool_calls:
      - {name: write_file, args: {path: a.txt, content: "v2\n"}}
  - content: done
`)
	ab := abCmd{fullEnv: baseEnv(t)}
	r := ab.run(t, "run", "--no-memory", "--policy", pol, "--workspace", ws, "--audit", log, "--script", first, "edit twice")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	sess := sessionOf(t, r.stderr)
	// The ended rw session is listed with what it promoted and held.
	if ls := ab.run(t, "changes"); ls.code != 0 || !strings.Contains(ls.stdout, sess) || !strings.Contains(ls.stdout, "2 promoted, 0 held") {
		t.Errorf("changes does not list the rw session with its counts: %d %q %q", ls.code, ls.stdout, ls.stderr)
	}

	// No task: the directory and the exact command, with the policy and
	// the session's own task (no TASK placeholder).
	only := filepath.Join(dir, "only")
	fk := ab.run(t, "fork", "--audit", log, "--image", "base", sess, "1", only)
	if fk.code != 0 || !strings.Contains(fk.stderr, "agentbox run --workspace "+only+" --workspace-mode copy --policy "+pol+" --image base --audit "+log+" -- 'edit twice'\n") ||
		strings.Contains(fk.stderr, "TASK") {
		t.Fatalf("fork without a task: %d %q", fk.code, fk.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(only, "a.txt")); string(b) != "v1\n" {
		t.Errorf("fork after checkpoint 1: a.txt is %q, want v1", b)
	}

	// A task: the forked session runs in copy mode on the checkpoint.
	second := filepath.Join(dir, "second.yaml")
	writeTestFile(t, second, `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "cat a.txt > seen.txt"}}
  - tool_calls:
      - {name: write_file, args: {path: locked.txt, content: "overwritten\n"}}
  - content: forked
`)
	forked := filepath.Join(dir, "forked")
	fr := ab.run(t, "fork", "--no-memory", "--audit", log, "--script", second, "--dir", forked, sess, "1", "--", "look", "at", "a.txt")
	if fr.code != 0 {
		t.Fatalf("fork with a task: %d\n%s", fr.code, fr.stderr)
	}
	if !strings.Contains(fr.stdout+fr.stderr, "forked") || !strings.Contains(fr.stderr, "files.write.deny[0]") {
		t.Errorf("the forked session's answer, or its policy's denial, is missing: %q %q", fr.stdout, fr.stderr)
	}
	m := sessionRe.FindStringSubmatch(fr.stderr)
	if m == nil {
		t.Fatalf("the forked session left no pending copy: %q", fr.stderr)
	}
	if _, err := os.Stat(filepath.Join(forked, "seen.txt")); err == nil {
		t.Error("the forked session wrote into its workspace directly (copy mode expected)")
	}
	if a := ab.run(t, "apply", m[1]); a.code != 0 {
		t.Fatalf("apply: %d %s", a.code, a.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(forked, "seen.txt")); string(b) != "v1\n" {
		t.Errorf("the forked session saw a.txt as %q, want the checkpoint's v1", b)
	}
	if b, _ := os.ReadFile(filepath.Join(forked, "locked.txt")); string(b) != "locked\n" {
		t.Errorf("the first session's policy (write deny) was not applied to the fork: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "v2\n" {
		t.Errorf("the source workspace changed: %q", b)
	}
	// Audited: the fork names its source; the new session records its
	// workspace, copy mode and the first session's policy.
	var forkRec, startRec bool
	b, _ := os.ReadFile(log)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if rec["event"] == "changes" && rec["session"] == sess && rec["call_id"] == "call_1_1" && rec["workspace"] == forked {
			forkRec = true
		}
		if rec["event"] == "session_start" && rec["session"] == m[1] && rec["workspace"] == forked && rec["workspace_mode"] == "copy" && rec["policy_path"] == pol {
			startRec = true
		}
	}
	if !forkRec || !startRec {
		t.Errorf("audit log: fork record %v, forked session_start %v", forkRec, startRec)
	}

	// The step the run printed ([2/30]): the fork after it has v2, its
	// printed command keeps --script; rewind to before it puts v1 back.
	if !strings.Contains(r.stderr, "[2/30] write_file") {
		t.Fatalf("the run did not print step 2:\n%s", r.stderr)
	}
	two := filepath.Join(dir, "two")
	f2 := ab.run(t, "fork", "--audit", log, "--script", second, sess, "2", two)
	if f2.code != 0 || !strings.Contains(f2.stderr, "--script "+second) {
		t.Errorf("fork at step 2: %d %q", f2.code, f2.stderr)
	}
	// The printed command pastes as it is: it runs the session's task on
	// the fork.
	if i := strings.Index(f2.stderr, "\n  agentbox run "); i < 0 {
		t.Errorf("fork at step 2 printed no run command: %q", f2.stderr)
	} else {
		words, err := shell.Fields(strings.TrimSpace(strings.SplitN(f2.stderr[i+3:], "\n", 2)[0]), nil)
		if err != nil || len(words) < 2 {
			t.Fatalf("the printed command is not one shell command: %v %q", err, f2.stderr)
		}
		if p := ab.run(t, append([]string{"run", "--no-memory"}, words[2:]...)...); p.code != 0 || !strings.Contains(p.stderr, "agentbox apply ") {
			t.Errorf("the printed command, pasted: %d %q", p.code, p.stderr)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(two, "a.txt")); string(b) != "v2\n" {
		t.Errorf("fork after step 2: a.txt is %q, want v2", b)
	}
	if rw := ab.run(t, "rewind", "--audit", log, sess, "2"); rw.code != 0 || !strings.Contains(rw.stderr, "step 2 (call call_2_1)") {
		t.Errorf("rewind to before step 2: %d %q", rw.code, rw.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "v1\n" {
		t.Errorf("rewind to before step 2: a.txt is %q, want v1", b)
	}

	// The policy changed since: refused, unless named.
	writeTestFile(t, pol, forkPolicy+"# changed\n")
	if x := ab.run(t, "fork", "--audit", log, sess, "1", filepath.Join(dir, "x")); x.code != 2 || !strings.Contains(x.stderr, "changed since") {
		t.Errorf("fork after the policy changed: %d %q", x.code, x.stderr)
	}
}
