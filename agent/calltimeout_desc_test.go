package agent_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
)

// Under the built-in default policy, the tools as run, exec, batch and
// mcp assemble them (NewTools) tell the model in execute_bash's
// description the default call timeout (2 minutes) and the bound on the
// "timeout" it may ask for (10 minutes, sandbox.timeouts.call_max).
func TestBashDescriptionStatesDefaultTimeouts(t *testing.T) {
	p := policy.Default()
	if p.Sandbox.CallTimeout != 2*time.Minute || p.Sandbox.CallTimeoutMax != 10*time.Minute {
		t.Fatalf("the built-in default's timeouts: call %s, call_max %s; want 2m and 10m", p.Sandbox.CallTimeout, p.Sandbox.CallTimeoutMax)
	}
	log, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cfg := agent.SandboxConfig(p, t.TempDir())
	tools, err := agent.NewTools(p, &cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	var desc string
	for _, d := range tools.Definitions() {
		if d.Function != nil && d.Function.Name == agent.ToolExecuteBash {
			desc = d.Function.Description
		}
	}
	if !strings.Contains(desc, `killed with all its processes after 2m0s unless you pass "timeout" (seconds, at most 600)`) {
		t.Errorf("execute_bash's description does not state the default timeout and its bound:\n%s", desc)
	}
}
