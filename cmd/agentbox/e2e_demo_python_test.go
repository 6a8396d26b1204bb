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
	ws, log := runExample(t, "python", "python-project")
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

// runExample copies examples/NAME to a fresh workspace and runs it through
// `run --devcontainer` with its scripted model (examples/NAME.yaml) in the
// toolchain image; it returns the workspace and the audit log. extra flags
// go before the task (the node demo approves npm install, an ask under the
// default policy).
func runExample(t *testing.T, image, name string, extra ...string) (ws, log string) {
	t.Helper()
	testutil.RequireDocker(t)
	if agentbox(t, nil, "exec", "--image", image, "--workspace", t.TempDir(), "--", "true").code != 0 {
		t.Skipf("agentbox/%s:latest is not built (make images builds it)", image)
	}
	ws = filepath.Join(t.TempDir(), "ws")
	if out, err := exec.Command("cp", "-R", "../../examples/"+name, ws).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	log = filepath.Join(t.TempDir(), "audit.jsonl")
	args := append([]string{"run", "--no-memory", "--devcontainer", "--workspace", ws, "--audit", log,
		"--script", "../../examples/" + name + ".yaml"}, extra...)
	r := agentbox(t, nil, append(args, "run the tests and fix the failing one")...)
	if r.code != 0 {
		t.Fatalf("run: %d %s %s", r.code, r.stdout, r.stderr)
	}
	return ws, log
}
