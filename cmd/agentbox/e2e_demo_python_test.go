package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// examples/python-project through `run --devcontainer` with its scripted
// model in the python image: the devcontainer's postCreateCommand makes the
// venv as tool call setup_1, the failing test is fixed, the tests pass.
func TestDemoPythonProject(t *testing.T) {
	testutil.RequireDocker(t)
	if agentbox(t, nil, "exec", "--image", "python", "--workspace", t.TempDir(), "--", "true").code != 0 {
		t.Skip("agentbox/python:latest is not built (TestPythonImageEndToEnd builds it)")
	}
	ws := filepath.Join(t.TempDir(), "ws")
	if out, err := exec.Command("cp", "-R", "../../examples/python-project", ws).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, nil, "run", "--no-memory", "--devcontainer", "--workspace", ws, "--audit", log,
		"--script", "../../examples/python-project.yaml", "run the tests and fix the failing one")
	if r.code != 0 {
		t.Fatalf("run: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "calc.py")); !strings.Contains(string(b), "return a + b") {
		t.Errorf("calc.py not fixed: %s", b)
	}
	var results []string
	setup := false
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event == "tool_call" && l.rec.CallID == "setup_1" && l.rec.Args["command"] == "python3 -m venv /workspace/.venv" {
			setup = true
		}
		if l.rec.Event == "tool_call" && l.rec.Phase == "result" && l.rec.Tool == "execute_bash" && l.rec.ExitCode != nil {
			results = append(results, l.rec.CallID+"="+string(rune('0'+*l.rec.ExitCode)))
		}
	}
	if !setup {
		t.Error("the postCreateCommand is not tool call setup_1 in the audit log")
	}
	if len(results) != 3 || results[0] != "setup_1=0" || !strings.HasSuffix(results[1], "=1") || !strings.HasSuffix(results[2], "=0") {
		t.Errorf("execute_bash results (call=exit): %q; want the venv, a failing run, a passing run", results)
	}
}
