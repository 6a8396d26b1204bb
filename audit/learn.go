package audit

import "strings"

// Decisions a learning run (`agentbox run --learn`) records: the policy
// would have asked or denied, and the call ran anyway (DecidedByLearn).
const (
	DecisionWouldAsk  = "would_ask"
	DecisionWouldDeny = "would_deny"
	DecidedByLearn    = "learn"
)

// Ran reports whether a recorded decision let the call run: allow, or a
// learning run's would_ask/would_deny.
func Ran(decision string) bool {
	return decision == "allow" || decision == DecisionWouldAsk || decision == DecisionWouldDeny
}

// PolicyVerdict is the policy's own verdict behind a recorded decision: a
// learning run's would_ask is ask, would_deny deny; others are as recorded.
func PolicyVerdict(decision string) string {
	if v, ok := strings.CutPrefix(decision, "would_"); ok {
		return v
	}
	return decision
}
