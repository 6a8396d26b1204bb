package agent

import (
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
)

// learnVerdict is a learning run's answer to a call the policy asks about
// or denies: the call runs, recorded as would_ask or would_deny with the
// rule (DecidedByLearn). ok is false outside a learning run or when the
// policy allows.
func (t *Tools) learnVerdict(dec policy.Decision) (decision string, ok bool) {
	if !t.Learn {
		return "", false
	}
	switch dec.Verdict {
	case policy.Ask:
		decision = audit.DecisionWouldAsk
	case policy.Deny:
		decision = audit.DecisionWouldDeny
	default:
		return "", false
	}
	// A program of this call stopped at exec time under one of the ask
	// rules that matched up front runs without a second record.
	t.approved = map[string]bool{}
	for _, r := range askRules(dec) {
		t.approved[r] = true
	}
	return decision, true
}
