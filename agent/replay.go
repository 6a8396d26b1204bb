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

var (
	_ audit.Decider    = ReplayDecider{}
	_ audit.NetDecider = ReplayDecider{}
)

// DecideNet re-decides a recorded net event with the policy's network
// rules; a policy without them denies it.
func (r ReplayDecider) DecideNet(host string, port int, addr string) (decision, rule string) {
	if n, ok := r.Policy.(audit.NetDecider); ok {
		return n.DecideNet(host, port, addr)
	}
	return policy.Deny.String(), "no network rules"
}

// DecideCall decides one recorded call.
func (r ReplayDecider) DecideCall(tool string, args map[string]any) (decision, rule string) {
	a, ok := ActionFor(tool, args)
	if !ok {
		return policy.Deny.String(), "unknown tool or arguments"
	}
	d := r.Policy.Decide(a)
	return d.Verdict.String(), d.Rule
}

var _ audit.NetRequestDecider = ReplayDecider{}

// DecideNetRequest re-decides a recorded request inside an intercepted
// connection with the policy's network.rules; a policy without them
// allows it (the host stage decided).
func (r ReplayDecider) DecideNetRequest(host string, port int, method, path string) (decision, rule string) {
	if n, ok := r.Policy.(audit.NetRequestDecider); ok {
		return n.DecideNetRequest(host, port, method, path)
	}
	return "allow", ""
}
