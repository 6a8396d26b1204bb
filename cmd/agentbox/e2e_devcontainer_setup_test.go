package main_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// Set-up you can see: a devcontainer's lifecycle commands each print a
// call line (which command, the verdict and rule, exit and duration) and
// are tool calls in the audit log; one the policy asks about, with nobody
// to approve it, ends the session with the rule, the reason and the fix
// (the policy entry to add, --approve), as exec and run alike say it.
func TestDevcontainerSetupShownAndDenialExplained(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	writeFile(t, filepath.Join(ws, ".devcontainer", "devcontainer.json"), `{
  "image": "agentbox/base:latest",
  "onCreateCommand": "echo made > /workspace/made.txt",
  "postCreateCommand": "frobnicate-xyz run --fast"
}`, 0o644)
	pol := writeFile(t, filepath.Join(dir, "policy.yaml"), "version: 1\nextends: none\ncommands:\n  default: ask\n  allow: [echo, cat]\nfiles:\n  write:\n    allow: [\"/workspace/**\"]\n", 0o644)
	log := filepath.Join(dir, "audit.jsonl")

	checkDenial := func(what, stderr string) {
		t.Helper()
		for _, want := range []string{
			"setup command 2 of 2 (frobnicate-xyz run --fast) needs approval",
			"commands.default is ask",                    // the rule and the reason
			"Not approved (--approve deny)",              // who refused
			`add "frobnicate-xyz run" to commands.allow`, // the fix: the policy entry
			"pass --approve allow",
			"agentbox policy explain 'frobnicate-xyz run --fast'",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: the denial does not say %q:\n%s", what, want, stderr)
			}
		}
		if strings.Contains(stderr, "setup command 2 was denied") {
			t.Errorf("%s: the old bare message:\n%s", what, stderr)
		}
	}
	setupLine := regexp.MustCompile(`(?m)^\[setup 1/2\] execute_bash +echo made > /workspace/made.txt +allow commands.allow\[0\] +exit 0 +\d+(\.\d)? m?s$`)
	deniedLine := regexp.MustCompile(`(?m)^\[setup 2/2\] execute_bash +frobnicate-xyz run --fast +deny commands.default \(flag\)$`)

	r := agentbox(t, nil, "exec", "--devcontainer", "--approve", "deny", "--workspace", ws, "--policy", pol, "--audit", log, "--", "cat made.txt")
	if r.code == 0 || r.stdout != "" {
		t.Fatalf("exec with a refused setup command: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if !setupLine.MatchString(r.stderr) || !deniedLine.MatchString(r.stderr) {
		t.Errorf("exec: no setup lines:\n%s", r.stderr)
	}
	checkDenial("exec", r.stderr)

	script := writeFile(t, filepath.Join(dir, "s.yaml"), "turns:\n  - content: done\n", 0o644)
	r = agentbox(t, nil, "run", "--no-memory", "--devcontainer", "--approve", "deny", "--workspace", ws, "--policy", pol, "--audit", log, "--script", script, "look around")
	if r.code == 0 {
		t.Fatalf("run with a refused setup command: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if !setupLine.MatchString(r.stderr) || !deniedLine.MatchString(r.stderr) {
		t.Errorf("run: no setup lines:\n%s", r.stderr)
	}
	checkDenial("run", r.stderr)

	// Both sessions recorded each lifecycle command as a tool call.
	results, decisions := 0, 0
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event != "tool_call" {
			continue
		}
		switch {
		case l.rec.CallID == "setup_1" && l.rec.Phase == "result" && l.rec.ExitCode != nil && *l.rec.ExitCode == 0:
			results++
		case l.rec.CallID == "setup_2" && l.rec.Phase == "decision" && l.rec.Decision == "deny" && l.rec.Rule == "commands.default":
			decisions++
		}
	}
	if results != 2 || decisions != 2 {
		t.Errorf("audit: %d setup_1 results (want 2), %d setup_2 denials (want 2)", results, decisions)
	}
}
