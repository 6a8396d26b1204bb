package batch

import (
	"fmt"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/policy"
)

// fieldRef names one field of the task in its task file, for a hint:
// "tasks[3].timeout in tasks.yaml (line 12)", or "timeout on line 4 of
// tasks.jsonl".
func (t *Task) fieldRef(name string) string {
	if t.Field == "" {
		return fmt.Sprintf("%s on line %d of %s", name, t.Line, t.File)
	}
	return fmt.Sprintf("%s.%s in %s (line %d)", t.Field, name, t.File, t.Line)
}

// limitHints say what to raise when the task hits a limit, naming where
// the limit came from: the task's own field, the command-line flag, or the
// policy.
func (b *batcher) limitHints(t *Task, pol *policy.Policy) agent.LimitHints {
	var h agent.LimitHints
	if t.MaxSteps > 0 {
		h.Steps = "raise " + t.fieldRef("max_steps") + " or narrow the task"
	} else {
		h.Steps = "raise --max-steps (or set " + t.fieldRef("max_steps") + ") or narrow the task"
	}
	switch {
	case t.Timeout > 0:
		h.Timeout = "raise " + t.fieldRef("timeout")
	case b.cfg.Timeout > 0:
		h.Timeout = "raise --timeout (or set " + t.fieldRef("timeout") + ")"
	default:
		h.Timeout = fmt.Sprintf("raise sandbox.timeouts.session in the policy (%s), or set %s", pol.Source(), t.fieldRef("timeout"))
	}
	return h
}
