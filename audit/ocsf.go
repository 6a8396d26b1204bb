package audit

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"strings"
)

// OCSFVersion is the OCSF schema version the export follows.
const OCSFVersion = "1.3.0"

// OCSF class ids used by the export.
const (
	OCSFFileActivity    = 1001
	OCSFProcessActivity = 1007
	OCSFNetworkActivity = 4001
)

// ocsfSession is what a session_start says about the records after it.
type ocsfSession struct {
	user, host, version, policy, policySHA, container, image string
}

// ExportStats counts what ExportOCSF wrote and left out.
type ExportStats struct {
	Events     int `json:"events"`
	Skipped    int `json:"skipped"`    // records with no OCSF class here (session, model and approval records)
	Unreadable int `json:"unreadable"` // lines that are not records
}

// ExportOCSF writes one OCSF 1.x event per line for the log's tool calls
// and egress attempts: Process Activity (1007) for execute_bash, File
// System Activity (1001) for read_file and write_file, Network Activity
// (4001) for net records. Each event names its source record (session,
// seq, line and the sha256 of the line, which the next line's prev holds)
// in metadata and unmapped, so it can be traced back and verified.
func ExportOCSF(w io.Writer, r io.Reader) (ExportStats, error) {
	var st ExportStats
	bw := bufio.NewWriter(w)
	sessions := map[string]*ocsfSession{}
	calls := map[string]map[string]any{} // session+call_id -> args of the decision
	err := scanRaw(r, func(l rawLine, rec *Record) error {
		s := sessions[rec.Session]
		if s == nil {
			s = &ocsfSession{}
			sessions[rec.Session] = s
		}
		if rec.Event == EventSessionStart {
			*s = ocsfSession{user: rec.User, host: rec.Host, version: rec.Version, policy: rec.PolicyPath,
				policySHA: rec.PolicySHA256, container: rec.ContainerID, image: rec.Image}
		}
		key := rec.Session + "\x00" + rec.CallID
		if rec.Event == EventToolCall && rec.Phase != PhaseResult && rec.CallID != "" {
			calls[key] = rec.Args
		}
		ev := ocsfEvent(rec, s, calls[key], l)
		if rec.Event == EventToolCall && rec.Phase == PhaseResult {
			delete(calls, key)
		}
		if ev == nil {
			st.Skipped++
			return nil
		}
		b, err := marshalValue(ev)
		if err != nil {
			return err
		}
		bw.Write(b)
		st.Events++
		return bw.WriteByte('\n')
	}, func(rawLine, error) error {
		st.Unreadable++
		return nil
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return st, err
}

// ocsfEvent maps one record, or returns nil when it has no class here.
func ocsfEvent(rec *Record, s *ocsfSession, callArgs map[string]any, l rawLine) map[string]any {
	args := rec.Args
	if len(args) == 0 {
		args = callArgs
	}
	var class, activity int
	var activityName string
	ev := map[string]any{}
	switch {
	case rec.Event == EventToolCall && rec.Tool == "execute_bash":
		class, activity, activityName = OCSFProcessActivity, 1, "Launch"
		cmd, _ := args["command"].(string)
		ev["process"] = map[string]any{"name": "bash", "cmd_line": cmd}
		if rec.ExitCode != nil {
			ev["exit_code"] = *rec.ExitCode
		}
	case rec.Event == EventToolCall && (rec.Tool == "read_file" || rec.Tool == "write_file"):
		class, activity, activityName = OCSFFileActivity, 2, "Read"
		if rec.Tool == "write_file" {
			activity, activityName = 3, "Update"
		}
		p, _ := args["path"].(string)
		ev["file"] = map[string]any{"name": path.Base(p), "path": p, "type_id": 1, "type": "Regular File"}
	case rec.Event == EventNet:
		class, activity, activityName = OCSFNetworkActivity, 6, "Traffic"
		if rec.Decision == "deny" {
			activity, activityName = 5, "Refuse"
		}
		dst := map[string]any{"hostname": rec.NetHost}
		if rec.NetPort != 0 {
			dst["port"] = rec.NetPort
		}
		if host, _, ok := strings.Cut(rec.NetAddr, ":"); ok && host != "" {
			dst["ip"] = host
		}
		ev["dst_endpoint"] = dst
		traffic := map[string]any{}
		if rec.BytesUp != nil {
			traffic["bytes_out"] = *rec.BytesUp
		}
		if rec.BytesDown != nil {
			traffic["bytes_in"] = *rec.BytesDown
		}
		if len(traffic) > 0 {
			ev["traffic"] = traffic
		}
	default:
		return nil
	}
	category, categoryName := 1, "System Activity"
	className := map[int]string{OCSFFileActivity: "File System Activity", OCSFProcessActivity: "Process Activity", OCSFNetworkActivity: "Network Activity"}[class]
	if class == OCSFNetworkActivity {
		category, categoryName = 4, "Network Activity"
	}
	sum := sha256.Sum256(l.b)
	ev["class_uid"], ev["class_name"] = class, className
	ev["category_uid"], ev["category_name"] = category, categoryName
	ev["activity_id"], ev["activity_name"] = activity, activityName
	ev["type_uid"], ev["type_name"] = class*100+activity, className+": "+activityName
	ev["time"] = rec.Time.UnixMilli()
	ev["time_dt"] = rec.Time.UTC().Format(TimeFormat)
	ev["severity_id"], ev["severity"] = 1, "Informational"
	switch rec.Decision {
	case "allow":
		ev["action_id"], ev["action"] = 1, "Allowed"
		ev["disposition_id"], ev["disposition"] = 1, "Allowed"
	case "deny":
		ev["action_id"], ev["action"] = 2, "Denied"
		ev["disposition_id"], ev["disposition"] = 2, "Blocked"
		ev["severity_id"], ev["severity"] = 3, "Medium"
	}
	if rec.Phase == PhaseResult {
		ok := rec.Error == "" && (rec.ExitCode == nil || *rec.ExitCode == 0) && (rec.TimedOut == nil || !*rec.TimedOut)
		ev["status_id"], ev["status"] = 2, "Failure"
		if ok {
			ev["status_id"], ev["status"] = 1, "Success"
		}
		if rec.Error != "" {
			ev["status_detail"] = rec.Error
		}
	}
	if rec.DurationMS != nil {
		ev["duration"] = *rec.DurationMS
	}
	ev["message"] = ocsfMessage(rec, args)
	if rec.Rule != "" || s.policySHA != "" {
		pol := map[string]any{"name": rec.Rule, "uid": s.policySHA, "is_applied": rec.Decision != ""}
		if rec.Reason != "" {
			pol["desc"] = rec.Reason
		}
		if s.policy != "" {
			pol["data"] = map[string]any{"source": s.policy}
		}
		ev["policy"] = pol
	}
	actor := map[string]any{"app_name": "agentbox", "session": map[string]any{"uid": rec.Session}}
	if s.user != "" {
		actor["user"] = map[string]any{"name": s.user}
	}
	ev["actor"] = actor
	device := map[string]any{"type_id": 0, "type": "Unknown"}
	if s.host != "" {
		device["hostname"] = s.host
	}
	if s.container != "" {
		device["container"] = map[string]any{"uid": s.container, "image": map[string]any{"name": s.image}}
	}
	ev["device"] = device
	product := map[string]any{"name": "agentbox", "vendor_name": "agentbox"}
	if s.version != "" {
		product["version"] = s.version
	}
	ev["metadata"] = map[string]any{
		"version":         OCSFVersion,
		"product":         product,
		"log_name":        "agentbox audit",
		"uid":             fmt.Sprintf("%s:%d", rec.Session, rec.Seq),
		"correlation_uid": rec.Session,
		"original_time":   rec.Time.UTC().Format(TimeFormat),
	}
	ev["unmapped"] = map[string]any{"agentbox": map[string]any{
		"session": rec.Session, "seq": rec.Seq, "line": l.n, "sha256": hex.EncodeToString(sum[:]), "prev": rec.Prev,
		"event": rec.Event, "phase": rec.Phase, "call_id": rec.CallID, "decided_by": rec.DecidedBy, "tool": rec.Tool,
	}}
	return ev
}

func ocsfMessage(rec *Record, args map[string]any) string {
	subject := ArgsSummary(rec.Tool, args)
	if rec.Event == EventNet {
		subject = fmt.Sprintf("%s:%d", rec.NetHost, rec.NetPort)
	}
	what := rec.Tool
	if what == "" {
		what = rec.Event
	}
	msg := what + " " + subject
	if rec.Phase == PhaseResult {
		return msg + " finished: " + resultText(rec, func(_, s string) string { return s })
	}
	if rec.Decision != "" {
		msg += " → " + rec.Decision
		if rec.Rule != "" {
			msg += " (" + rec.Rule + ")"
		}
	}
	return msg
}
