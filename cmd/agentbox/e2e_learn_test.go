package main_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	root "github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/internal/testutil"
)

// TestLearnRun is issue 26 item 1 through the real binary: a learning run
// (run --learn) of the calc task under a policy that asks about its test
// command runs to completion without anyone to ask; the audit says it is a
// learning run and holds would_ask with the rule (up front and at exec
// time); the workspace is untouched until apply; policy suggest on the log
// gives a policy under which replay of the run has no new denial.
func TestLearnRun(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	in := abCmd{dir: dir, fullEnv: baseEnv(t)} // one HOME: apply finds the run's copy
	ex := filepath.Join(testutil.RepoRoot(), "examples", "authoring")
	ws := filepath.Join(dir, "ws")
	if err := os.CopyFS(ws, os.DirFS(filepath.Join(ex, "calc"))); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(filepath.Join(ws, "calc.py"))
	if err != nil {
		t.Fatal(err)
	}
	strict := filepath.Join(dir, "strict.yaml")
	asks := strings.Replace(string(root.DefaultPolicy), "\n  ask:\n", "\n  ask:\n    - python3 -m unittest\n", 1)
	if asks == string(root.DefaultPolicy) {
		t.Fatal("the default policy has no commands.ask list to extend")
	}
	writeFile(t, strict, asks, 0o644)
	log := filepath.Join(dir, "learn.jsonl")
	r := in.run(t, "run", "--learn", "--policy", strict, "--approve", "deny", "--workspace", ws, "--audit", log,
		"--script", filepath.Join(ex, "calc.learn.yaml"), "fix the failing test")
	if r.code != 0 {
		t.Fatalf("learning run: %d %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "learning run") {
		t.Errorf("the start header does not say it is a learning run: %q", r.stderr)
	}
	var session string
	wouldAsk := 0
	for _, l := range readAuditLog(t, log) {
		switch {
		case l.rec.Event == "session_start":
			session = l.rec.Session
			if l.rec.Learn == nil || !*l.rec.Learn || l.rec.WorkspaceMode != "copy" {
				t.Errorf("session_start of a learning run: %s", l.raw)
			}
		case l.rec.Decision == "would_ask":
			wouldAsk++
			if !strings.HasPrefix(l.rec.Rule, "commands.ask[") || l.rec.DecidedBy != "learn" {
				t.Errorf("would_ask without its rule: %s", l.raw)
			}
		case l.rec.Decision == "deny" || l.rec.Decision == "ask":
			t.Errorf("a learning run refused: %s", l.raw)
		}
	}
	if wouldAsk < 2 {
		t.Errorf("%d would_ask records, want both unittest calls", wouldAsk)
	}
	if now, _ := os.ReadFile(filepath.Join(ws, "calc.py")); !bytes.Equal(now, orig) {
		t.Errorf("the learning run changed the workspace before apply:\n%s", now)
	}

	sugg := filepath.Join(dir, "suggested.yaml")
	if r := in.run(t, "policy", "suggest", log, "-o", sugg); r.code != 0 {
		t.Fatalf("suggest: %d %q", r.code, r.stderr)
	}
	if text, _ := os.ReadFile(sugg); !strings.Contains(string(text), "python3 -m unittest") {
		t.Errorf("the suggestion does not allow what the run was asked about:\n%s", text)
	}
	if denied, calls := newDenials(t, in, log, sugg); denied != 0 {
		t.Errorf("replay of the learning run under its suggestion: %d new denials in %d calls", denied, calls)
	}

	if r := in.run(t, "apply", session); r.code != 0 {
		t.Fatalf("apply %s: %d %q", session, r.code, r.stderr)
	}
	if now, _ := os.ReadFile(filepath.Join(ws, "calc.py")); bytes.Equal(now, orig) || !strings.Contains(string(now), "return a + b") {
		t.Errorf("apply did not bring the learning run's change:\n%s", now)
	}
}
