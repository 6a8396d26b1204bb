package agent

import (
	"context"
	"encoding/json"
	"fmt"
)

// Setup runs commands (a devcontainer's lifecycle commands) one after
// another as ordinary execute_bash calls (call ids setup_1, ...): the same
// policy decisions, approvals and audit records as the agent's own. It
// stops at the first that does not succeed and says which.
func (t *Tools) Setup(ctx context.Context, cmds []string) (Outcome, error) {
	var o Outcome
	for i, c := range cmds {
		args, _ := json.Marshal(map[string]string{"command": c})
		o = t.Call(ctx, fmt.Sprintf("setup_%d", i+1), ToolExecuteBash, string(args))
		switch {
		case o.Err != nil:
			return o, fmt.Errorf("setup command %d: %w", i+1, o.Err)
		case o.Denied:
			return o, fmt.Errorf("setup command %d was denied: %s", i+1, o.Summary)
		case o.TimedOut:
			return o, fmt.Errorf("setup command %d timed out", i+1)
		case o.ExitCode != 0:
			return o, fmt.Errorf("setup command %d exited %d; fix it in devcontainer.json", i+1, o.ExitCode)
		}
	}
	return o, nil
}

// setupThenWork runs the setup commands, then the agent's steps.
func (r *runner) setupThenWork(ctx context.Context) (string, error) {
	if _, err := r.tools.Setup(ctx, r.cfg.Setup); err != nil {
		return "", err
	}
	return r.work(ctx)
}
