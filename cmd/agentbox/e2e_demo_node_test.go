package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// examples/node-project through `run --devcontainer` with its scripted
// model in the node image, offline: npm installs the vendored dependency,
// node --test fails, the bug is fixed, node --test passes.
func TestDemoNodeProject(t *testing.T) {
	// npm install is an ask under the default policy: the scripted demo
	// approves it.
	ws, log := runExample(t, "node", "node-project", "--approve", "allow")
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
