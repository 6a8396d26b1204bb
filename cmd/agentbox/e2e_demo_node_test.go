package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// examples/node-project through `run --devcontainer` with its scripted
// model in the node image, offline: npm installs the vendored dependency,
// node --test fails, the bug is fixed, node --test passes.
func TestDemoNodeProject(t *testing.T) {
	testutil.RequireDocker(t)
	if agentbox(t, nil, "exec", "--image", "node", "--workspace", t.TempDir(), "--", "true").code != 0 {
		t.Skip("agentbox/node:latest is not built (agentbox image build node)")
	}
	ws := filepath.Join(t.TempDir(), "ws")
	if out, err := exec.Command("cp", "-R", "../../examples/node-project", ws).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	// npm install is an ask under the default policy: the scripted demo
	// approves it.
	r := agentbox(t, nil, "run", "--no-memory", "--approve", "allow", "--devcontainer", "--workspace", ws, "--audit", log,
		"--script", "../../examples/node-project.yaml", "run the tests and fix the failing one")
	if r.code != 0 {
		t.Fatalf("run: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "src", "cart.js")); !strings.Contains(string(b), "item.price * item.qty") {
		t.Errorf("cart.js not fixed: %s", b)
	}
	// npm links or copies a file: dependency (its install-links setting);
	// either way it is in the workspace's node_modules.
	if _, err := os.Stat(filepath.Join(ws, "node_modules", "slugify", "index.js")); err != nil {
		t.Errorf("the vendored dependency is not installed in the workspace: %v", err)
	}
	var results []string
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event == "tool_call" && l.rec.Phase == "result" && l.rec.Tool == "execute_bash" && l.rec.ExitCode != nil {
			results = append(results, l.rec.CallID+"="+string(rune('0'+*l.rec.ExitCode)))
		}
	}
	if len(results) != 4 || results[0] != "setup_1=0" || !strings.HasSuffix(results[1], "=0") || !strings.HasSuffix(results[2], "=1") || !strings.HasSuffix(results[3], "=0") {
		t.Errorf("execute_bash results (call=exit): %q; want node --version, the install, a failing run, a passing run", results)
	}
}
