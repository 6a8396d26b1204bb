package netproxy

import (
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
)

// The policy re-decides recorded net events in audit replay.
var (
	_ audit.NetDecider        = (*policy.Policy)(nil)
	_ audit.NetRequestDecider = (*policy.Policy)(nil)
)

// Record is the event as a `net` audit record of the given session (Seq,
// Time and the chain are the writer's).
func (e Event) Record(session string) *audit.Record {
	return &audit.Record{
		Session: session, Event: audit.EventNet,
		NetHost: e.Host, NetPort: e.Port, NetAddr: e.Addr,
		Decision: e.Decision, Rule: e.Rule, Reason: e.Reason,
		DurationMS: audit.Ptr(e.Duration.Milliseconds()),
		BytesUp:    audit.Ptr(e.BytesUp), BytesDown: audit.Ptr(e.BytesDown),
		Error:     e.Err,
		NetMethod: e.requestMethod(), NetPath: e.Path, NetStatus: e.Status,
		RuleText: e.RuleText, Secret: e.Secret, CallID: e.CallID, BodySHA256: e.BodySHA256,
		PID: e.PID, Argv: e.Argv,
	}
}

// requestMethod is the method of a request event; a CONNECT is the
// connection, recorded without one.
func (e Event) requestMethod() string {
	if e.Method == "CONNECT" {
		return ""
	}
	return e.Method
}

// AlarmRecord is the alarm a refused placeholder raises (nil for any other
// event): what secret_misuse, the secret, the destination and the reason.
func (e Event) AlarmRecord(session string) *audit.Record {
	if e.Alarm == "" {
		return nil
	}
	return &audit.Record{
		Session: session, Event: audit.EventAlarm, What: e.Alarm, Action: "refused",
		CallID: e.CallID, Secret: e.Secret, NetHost: e.Host, NetPort: e.Port, NetAddr: e.Addr,
		NetMethod: e.Method, NetPath: e.Path, Rule: e.Rule, RuleText: e.RuleText, Reason: e.Reason,
		PID: e.PID, Argv: e.Argv,
	}
}
