package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/workspace"
)

// copyCalc makes a fresh copy of the example calc workspace.
func copyCalc(t *testing.T) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "calc")
	if err := workspace.CopyTree(filepath.Join(testutil.RepoRoot(), "examples", "batch", "workspaces", "calc"), ws, 0); err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestRunCopyMode: with --workspace-mode copy the workspace is untouched
// unless --apply, which applies exactly the session's changes.
func TestRunCopyMode(t *testing.T) {
	testutil.RequireDocker(t)
	script := filepath.Join(testutil.RepoRoot(), "examples", "batch", "scripts", "fix-add.yaml")
	const task = "fix add() in calc.py and delete NOTES.txt"

	ws := copyCalc(t)
	orig, _ := os.ReadFile(filepath.Join(ws, "calc.py"))
	r := agentbox(t, nil, "run", "--no-memory", "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"),
		"--workspace-mode", "copy", "--script", script, task)
	if r.code != 0 || !strings.Contains(r.stderr, "the workspace is untouched") {
		t.Fatalf("copy without --apply: %d %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "calc.py")); string(b) != string(orig) {
		t.Errorf("the workspace changed without --apply")
	}
	if _, err := os.Stat(filepath.Join(ws, "NOTES.txt")); err != nil {
		t.Errorf("NOTES.txt deleted without --apply")
	}

	r = agentbox(t, nil, "run", "--no-memory", "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"),
		"--workspace-mode", "copy", "--apply", "--script", script, task)
	if r.code != 0 || !strings.Contains(r.stderr, "applied 2 change(s)") {
		t.Fatalf("copy --apply: %d %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "calc.py")); !strings.Contains(string(b), "return a + b") {
		t.Errorf("calc.py not applied: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "NOTES.txt")); err == nil {
		t.Errorf("NOTES.txt deletion not applied")
	}
	if r := agentbox(t, nil, "run", "--workspace", ws, "--apply", "--script", script, task); r.code != 2 {
		t.Errorf("--apply without copy: %d %q", r.code, r.stderr)
	}
}
