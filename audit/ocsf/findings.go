package ocsf

import (
	"fmt"

	"github.com/agentbox/agentbox/audit"
)

// approval is a person's answer to an ask: User Access Management, Assign
// Privileges (the user let the agent do one thing) or Other ("Refuse").
func (x *exporter) approval(s *src) map[string]any {
	rec := s.rec
	act, name := 1, "Assign Privileges"
	if rec.Decision != "allow" {
		act, name = 99, "Refuse"
	}
	e := x.newEvent(s, ClassUserAccess, act, name)
	subject := rec.Tool
	if len(rec.Argv) > 0 {
		subject += ": exec " + argvLine(rec.Argv)
	} else if rec.Prompt != "" {
		subject += ": " + rec.Prompt
	}
	e.m["privileges"] = []string{subject}
	e.m["user"] = map[string]any{"name": firstOf(rec.Approver, rec.DecidedBy, "unknown")}
	e.actorDevice(x, rec, false)
	e.profiles[profileHost] = true // IAM classes have actor through the host profile
	e.status(true, "")
	if rec.Decision != "allow" {
		e.severity(severityLow)
	}
	e.m["message"] = fmt.Sprintf("%s %s %s (%s)", firstOf(rec.Approver, rec.DecidedBy, "someone"), rec.Decision, subject, rec.Rule)
	e.unmapped("call_id", rec.CallID)
	e.unmapped("decision", rec.Decision)
	e.unmapped("rule", rec.Rule)
	e.unmapped("decided_by", rec.DecidedBy)
	e.unmapped("note", rec.Reason)
	e.unmapped("scope", rec.Scope)
	return e.done()
}

// alarm is a Detection Finding, whatever its kind (a forbidden effect
// undone, an unexpected exec, a secret misused, a change held back): the
// kind is the finding's type and, with the record's hash, its uid.
func (x *exporter) alarm(s *src) map[string]any {
	rec := s.rec
	e := x.newEvent(s, ClassDetection, 1, "Create")
	kind := rawString(s, "kind")
	if kind == "" {
		kind = firstOf(rec.What, "alarm")
	}
	subject := firstOf(rec.Path, argvLine(rec.Argv), rawString(s, "secret"), rawString(s, "net_host"), rawString(s, "host"), rec.Exe)
	title := kind
	if subject != "" {
		title += ": " + subject
	}
	info := map[string]any{"uid": s.sum, "title": title, "types": []string{kind}}
	if d := firstOf(rec.Reason, rec.Action, rec.Error); d != "" {
		info["desc"] = d
	}
	if rec.Rule != "" {
		info["analytic"] = map[string]any{"name": rec.Rule, "type_id": 1, "type": "Rule"}
	}
	e.m["finding_info"] = info
	e.m["status_id"], e.m["status"] = 1, "New"
	e.severity(severityHigh)
	e.actorDevice(x, rec, true)
	e.profiles[profileHost] = true
	e.m["message"] = "alarm " + title
	if rec.Action != "" {
		e.m["message"] = e.m["message"].(string) + " (" + rec.Action + ")"
	}
	e.unmapped("call_id", rec.CallID)
	e.unmapped("kind", kind)
	e.unmapped("what", rec.What)
	e.unmapped("action", rec.Action)
	e.unmapped("rule", rec.Rule)
	if len(rec.Argv) > 0 {
		e.unmapped("argv", rec.Argv)
	}
	addRawExtras(e, s, "parents", "secret", "net_host", "net_method", "net_path", "net_status", "host", "method", "paths", "changes")
	return e.done()
}

// base exports an error, and any record kind newer than this exporter, as
// a Base Event (activity Other) keeping the record's own event name.
func (x *exporter) base(s *src) map[string]any {
	rec := s.rec
	e := x.newEvent(s, ClassBase, 99, rec.Event)
	if rec.Event == audit.EventError || rec.Error != "" {
		e.status(false, rec.Error)
		e.severity(severityMedium)
		e.m["message"] = "error: " + rec.Error
	} else {
		e.m["message"] = rec.Event
	}
	e.unmapped("call_id", rec.CallID)
	e.unmapped("tool", rec.Tool)
	e.unmapped("record", s.raw)
	return e.done()
}

func rawString(s *src, k string) string {
	v, _ := s.raw[k].(string)
	return v
}

// addRawExtras copies members of the record's line that Record may not
// know into unmapped.
func addRawExtras(e *event, s *src, keys ...string) {
	for _, k := range keys {
		if v, ok := s.raw[k]; ok {
			e.unmapped(k, v)
		}
	}
}
