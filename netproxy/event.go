package netproxy

import (
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
)

// The policy re-decides recorded net events in audit replay.
var _ audit.NetDecider = (*policy.Policy)(nil)

// Record is the event as a `net` audit record of the given session (Seq,
// Time and the chain are the writer's).
func (e Event) Record(session string) *audit.Record {
	return &audit.Record{
		Session: session, Event: audit.EventNet,
		NetHost: e.Host, NetPort: e.Port, NetAddr: e.Addr,
		Decision: e.Decision, Rule: e.Rule, Reason: e.Reason,
		DurationMS: audit.Ptr(e.Duration.Milliseconds()),
		BytesUp:    audit.Ptr(e.BytesUp), BytesDown: audit.Ptr(e.BytesDown),
		Error: e.Err,
	}
}
