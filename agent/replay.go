package agent

import (
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
)

// ReplayDecider re-decides recorded tool calls under a policy (`agentbox
// audit replay`). The registry maps each call to its policy action, so
// every registered tool replays; an unknown tool or a call without its
// arguments is denied.
type ReplayDecider struct {
	Policy Decider
}

var _ audit.Decider = ReplayDecider{}

// DecideCall decides one recorded call.
func (r ReplayDecider) DecideCall(tool string, args map[string]any) (decision, rule string) {
	a, ok := ActionFor(tool, args)
	if !ok {
		return policy.Deny.String(), "unknown tool or arguments"
	}
	d := r.Policy.Decide(a)
	return d.Verdict.String(), d.Rule
}
