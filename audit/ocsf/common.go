package ocsf

import (
	"sort"
	"strings"

	"github.com/agentbox/agentbox/audit"
)

// OCSF classes used by the export (class_uid).
const (
	ClassBase           = 0
	ClassFileActivity   = 1001
	ClassProcess        = 1007
	ClassDetection      = 2004
	ClassUserAccess     = 3005
	ClassNetwork        = 4001
	ClassAppLifecycle   = 6002
	ClassAPIActivity    = 6003
	profileHost         = "host"
	profileSecurity     = "security_control"
	profileContainer    = "container"
	severityInformation = 1
	severityLow         = 2
	severityMedium      = 3
	severityHigh        = 4
)

var classNames = map[int]string{
	ClassBase: "Base Event", ClassFileActivity: "File System Activity", ClassProcess: "Process Activity",
	ClassDetection: "Detection Finding", ClassUserAccess: "User Access Management", ClassNetwork: "Network Activity",
	ClassAppLifecycle: "Application Lifecycle", ClassAPIActivity: "API Activity",
}

var categoryNames = map[int]string{0: "Uncategorized", 1: "System Activity", 2: "Findings",
	3: "Identity & Access Management", 4: "Network Activity", 6: "Application Activity"}

var severityNames = map[int]string{severityInformation: "Informational", severityLow: "Low", severityMedium: "Medium", severityHigh: "High"}

// event is one OCSF event under construction.
type event struct {
	m        map[string]any
	profiles map[string]bool
}

// newEvent fills what every class has: classification, time, severity,
// message and metadata naming the source record.
func (x *exporter) newEvent(s *src, class, activity int, activityName string) *event {
	rec := s.rec
	e := &event{m: map[string]any{}, profiles: map[string]bool{}}
	category := class / 1000
	e.m["class_uid"], e.m["class_name"] = class, classNames[class]
	e.m["category_uid"], e.m["category_name"] = category, categoryNames[category]
	e.m["activity_id"], e.m["activity_name"] = activity, activityName
	e.m["type_uid"], e.m["type_name"] = class*100+activity, classNames[class]+": "+activityName
	e.m["time"] = rec.Time.UnixMilli()
	e.severity(severityInformation)
	ss := x.sess(rec.Session)
	product := map[string]any{"name": "agentbox", "vendor_name": "agentbox"}
	if ss.version != "" {
		product["version"] = ss.version
	}
	e.m["metadata"] = map[string]any{
		"version":         Version,
		"product":         product,
		"log_name":        "agentbox audit",
		"log_provider":    "agentbox",
		"uid":             s.sum,
		"sequence":        rec.Seq,
		"correlation_uid": rec.Session,
		"original_time":   rec.Time.UTC().Format(audit.TimeFormat),
	}
	e.m["unmapped"] = map[string]any{"agentbox": map[string]any{
		"session": rec.Session, "seq": rec.Seq, "line": s.line, "sha256": s.sum, "prev": rec.Prev, "event": rec.Event,
	}}
	return e
}

func (e *event) severity(id int) {
	e.m["severity_id"], e.m["severity"] = id, severityNames[id]
}

func (e *event) status(ok bool, detail string) {
	e.m["status_id"], e.m["status"] = 2, "Failure"
	if ok {
		e.m["status_id"], e.m["status"] = 1, "Success"
	}
	if detail != "" {
		e.m["status_detail"] = detail
	}
}

// unmapped adds agentbox fields OCSF has no attribute for.
func (e *event) unmapped(k string, v any) {
	switch t := v.(type) {
	case string:
		if t == "" {
			return
		}
	case nil:
		return
	}
	e.m["unmapped"].(map[string]any)["agentbox"].(map[string]any)[k] = v
}

// decision sets the security_control profile's action and disposition and
// the authorization that decided: the policy rule (with the policy file's
// sha256) or the person who answered.
func (e *event) decision(x *exporter, rec *audit.Record) {
	switch rec.Decision {
	case "allow":
		e.m["action_id"], e.m["action"] = 1, "Allowed"
		e.m["disposition_id"], e.m["disposition"] = 1, "Allowed"
	case "deny":
		e.m["action_id"], e.m["action"] = 2, "Denied"
		e.m["disposition_id"], e.m["disposition"] = 2, "Blocked"
	case audit.DecisionWouldAsk, audit.DecisionWouldDeny: // a learning run: ran, and logged
		e.m["action_id"], e.m["action"] = 1, "Allowed"
		e.m["disposition_id"], e.m["disposition"] = 17, "Logged"
	default:
		e.m["action_id"], e.m["action"] = 0, "Unknown"
	}
	e.profiles[profileSecurity] = true
	ss := x.sess(rec.Session)
	if rec.Rule == "" && ss.policySHA == "" {
		return
	}
	pol := map[string]any{"name": firstOf(rec.Rule, "policy"), "is_applied": rec.Decision != ""}
	if ss.policySHA != "" {
		pol["uid"] = ss.policySHA
	}
	if rec.Reason != "" {
		pol["desc"] = rec.Reason
	}
	auth := map[string]any{"policy": pol}
	if rec.Decision != "" {
		auth["decision"] = rec.Decision
	}
	e.m["authorizations"] = []any{auth}
	e.unmapped("rule", rec.Rule)
	e.unmapped("decided_by", rec.DecidedBy)
	e.unmapped("policy_path", ss.policy)
}

// actorDevice sets the system classes' actor (agentbox, its session and
// the user who ran it) and device (the host, with the sandbox container).
func (e *event) actorDevice(x *exporter, rec *audit.Record, withDevice bool) {
	ss := x.sess(rec.Session)
	actor := map[string]any{"app_name": "agentbox", "session": map[string]any{"uid": rec.Session}}
	if ss.user != "" {
		actor["user"] = map[string]any{"name": ss.user}
	}
	e.m["actor"] = actor
	if !withDevice {
		return
	}
	device := map[string]any{"type_id": 0, "type": "Unknown"}
	if ss.host != "" {
		device["hostname"] = ss.host
		device["name"] = ss.host
	} else {
		device["name"] = "agentbox host"
	}
	if ss.container != "" {
		c := map[string]any{"uid": ss.container}
		if ss.image != "" || ss.imageID != "" {
			c["image"] = map[string]any{"name": ss.image, "uid": firstOf(ss.imageID, ss.image)}
			c["name"] = ss.image
		}
		device["container"] = c
		e.profiles[profileContainer] = true
	}
	e.m["device"] = device
}

// done lists the profiles used in metadata.profiles.
func (e *event) done() map[string]any {
	if len(e.profiles) > 0 {
		ps := make([]string, 0, len(e.profiles))
		for p := range e.profiles {
			ps = append(ps, p)
		}
		sort.Strings(ps)
		e.m["metadata"].(map[string]any)["profiles"] = ps
	}
	return e.m
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func argvLine(argv []string) string { return strings.Join(argv, " ") }
