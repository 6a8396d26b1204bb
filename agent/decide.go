package agent

import "github.com/agentbox/agentbox/policy"

// Decide is the policy's verdict on a tool call before anything runs,
// exactly as Call would reach it (same parsing, same policy); ok is false
// when the tool is unknown or its arguments are invalid (Call reports
// those). It records nothing: front-ends that must obtain an approval
// outside Call (MCP elicitation across requests) ask first, then hand the
// answer to Call through Tools.Approver.
func (t *Tools) Decide(name, argsJSON string) (dec policy.Decision, summary string, ok bool) {
	spec, found := lookupTool(name)
	if !found {
		return policy.Decision{}, "", false
	}
	call, err := spec.parse([]byte(argsJSON))
	if err != nil {
		return policy.Decision{}, "", false
	}
	return t.Policy.Decide(call.action), call.summary, true
}

// Answered is an Approver that gives an answer obtained earlier (for one
// call).
func Answered(ap Approval) Approver { return answered{ap} }
