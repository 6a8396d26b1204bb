package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
)

// A turn with more tool calls than the bound runs only the first ones; the
// rest are answered "not run" and each skipped call is recorded as refused.
func TestRunBoundsToolCallsPerTurn(t *testing.T) {
	tools, fs, path := newTools(t)
	var calls []string
	for i := range 40 {
		calls = append(calls, fmt.Sprintf("{name: execute_bash, args: {command: \"echo %d\"}}", i))
	}
	y := "turns:\n  - tool_calls: [" + strings.Join(calls, ", ") + "]\n  - content: done\n"
	cfg := runCfg(t, tools, script(t, y), "many calls")
	res, err := run(context.Background(), cfg)
	if err != nil || res.Status != agent.StatusOK {
		t.Fatalf("res %+v err %v", res, err)
	}
	fs.mu.Lock()
	ran := len(fs.cmds)
	fs.mu.Unlock()
	if ran != agent.DefaultMaxCallsPerTurn {
		t.Errorf("%d calls ran, want %d", ran, agent.DefaultMaxCallsPerTurn)
	}
	recs := readAudit(t, path)
	// Each call that ran has a decision and a result; each skipped one its
	// own refused decision record.
	if n := len(events(recs, audit.EventToolCall)); n != 2*agent.DefaultMaxCallsPerTurn+8 {
		t.Errorf("%d tool_call records, want %d", n, 2*agent.DefaultMaxCallsPerTurn+8)
	}
	errs := events(recs, audit.EventError)
	if len(errs) != 1 || !strings.Contains(errs[0].Error, "skipped 8") {
		t.Errorf("error records = %+v", errs)
	}
}
