package ocsf

import (
	"fmt"
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/audit"
)

// lifecycle: session_start and session_end are Application Lifecycle
// Start and Stop of agentbox.
func (x *exporter) lifecycle(s *src) map[string]any {
	rec := s.rec
	act, name := 3, "Start"
	if rec.Event == audit.EventSessionEnd {
		act, name = 4, "Stop"
	}
	e := x.newEvent(s, ClassAppLifecycle, act, name)
	ss := x.sess(rec.Session)
	app := map[string]any{"name": "agentbox", "vendor_name": "agentbox"}
	if ss.version != "" {
		app["version"] = ss.version
	}
	e.m["app"] = app
	e.actorDevice(x, rec, true)
	e.profiles[profileHost] = true
	if rec.Event == audit.EventSessionStart {
		e.m["message"] = "session " + rec.Session + " started: " + rec.Task
		e.status(true, "")
		for k, v := range map[string]string{"task": rec.Task, "task_id": rec.TaskID, "model": rec.Model, "workspace": rec.Workspace,
			"workspace_mode": rec.WorkspaceMode, "image": rec.Image, "image_id": rec.ImageID, "policy_path": rec.PolicyPath, "policy_sha256": rec.PolicySHA256} {
			e.unmapped(k, v)
		}
		return e.done()
	}
	e.m["message"] = fmt.Sprintf("session %s ended: %s after %d steps", rec.Session, rec.Status, rec.Steps)
	e.status(rec.Status == "ok", rec.Status)
	if rec.Status != "ok" {
		e.severity(severityLow)
	}
	e.unmapped("steps", rec.Steps)
	e.unmapped("answer", rec.Answer)
	if len(rec.Files) > 0 {
		e.unmapped("files", rec.Files)
	}
	addRawExtras(e, s, "otlp_dropped", "checkpoint")
	return e.done()
}

// modelCall is an API Activity (Create: a chat completion) of agentbox
// against the model's API.
func (x *exporter) modelCall(s *src) map[string]any {
	rec := s.rec
	e := x.newEvent(s, ClassAPIActivity, 1, "Create")
	ss := x.sess(rec.Session)
	api := map[string]any{"operation": "chat.completions.create"}
	if ss.model != "" {
		api["service"] = map[string]any{"name": ss.model}
	}
	e.m["api"] = api
	e.actorDevice(x, rec, false)
	e.m["src_endpoint"] = endpoint(ss.host, "agentbox host")
	if rec.DurationMS != nil {
		e.m["duration"] = *rec.DurationMS
	}
	e.m["message"] = fmt.Sprintf("model call, step %d: %d tokens, finish reason %s", rec.Step, rec.TotalTokens, firstOf(rec.FinishReason, "none"))
	e.status(true, "")
	for k, v := range map[string]int{"step": rec.Step, "prompt_tokens": rec.PromptTokens, "completion_tokens": rec.CompletionTokens, "total_tokens": rec.TotalTokens} {
		if v != 0 {
			e.unmapped(k, v)
		}
	}
	e.unmapped("finish_reason", rec.FinishReason)
	e.unmapped("text", rec.Text)
	return e.done()
}

// toolCall is one event per call: Process Activity Launch for
// execute_bash, File System Activity Read/Update for read_file and
// write_file, with the decision (d) and the outcome (res, nil when the
// call did not run or its result is missing).
func (x *exporter) toolCall(d, res *src) map[string]any {
	first := d
	if first == nil {
		first = res
	}
	last := res
	if last == nil {
		last = d
	}
	args := first.rec.Args
	tool := first.rec.Tool
	var e *event
	switch tool {
	case "read_file", "write_file", "list_files":
		act, name := 2, "Read"
		if tool == "write_file" {
			act, name = 3, "Update"
		}
		e = x.newEvent(last, ClassFileActivity, act, name)
		p, _ := args["path"].(string)
		e.m["file"] = fileObj(p, tool == "list_files")
	default:
		e = x.newEvent(last, ClassProcess, 1, "Launch")
		cmd, _ := args["command"].(string)
		proc := map[string]any{"name": "bash", "cmd_line": cmd, "uid": first.rec.Session + "/" + first.rec.CallID}
		if tool != "execute_bash" {
			proc["name"] = firstOf(tool, "unknown")
			proc["cmd_line"] = audit.ArgsSummary(tool, args)
		}
		e.m["process"] = proc
	}
	e.actorDevice(x, last.rec, true)
	dec := *first.rec
	if res != nil && res.rec.Decision == "deny" { // denied at the file layer after an allow
		dec.Decision, dec.Rule = "deny", firstOf(res.rec.Rule, dec.Rule)
	}
	e.decision(x, &dec)
	e.unmapped("call_id", first.rec.CallID)
	e.unmapped("tool", tool)
	e.unmapped("decision_sha256", first.sum)
	e.unmapped("decision_line", first.line)
	msg := firstOf(tool, "tool") + " " + audit.ArgsSummary(tool, args)
	switch {
	case !audit.Ran(dec.Decision):
		e.severity(severityMedium)
		e.status(false, "denied: "+firstOf(dec.Reason, dec.Rule, "by policy"))
		e.m["message"] = msg + " → denied (" + firstOf(dec.Rule, dec.DecidedBy) + ")"
		return e.done()
	case res == nil:
		e.m["status_id"], e.m["status"] = 0, "Unknown"
		e.m["status_detail"] = "no result recorded (the session crashed or the log was cut)"
		e.m["message"] = msg + " → allowed; no result recorded"
		return e.done()
	}
	r := res.rec
	ok := r.Error == "" && (r.ExitCode == nil || *r.ExitCode == 0) && (r.TimedOut == nil || !*r.TimedOut)
	detail := r.Error
	if r.TimedOut != nil && *r.TimedOut {
		detail = firstOf(detail, "timed out")
	} else if r.ExitCode != nil && *r.ExitCode != 0 {
		detail = firstOf(detail, "exit code "+strconv.Itoa(*r.ExitCode))
	}
	e.status(ok, detail)
	if !ok {
		e.severity(severityLow)
	}
	if r.ExitCode != nil && e.m["class_uid"] == ClassProcess {
		e.m["exit_code"] = *r.ExitCode
	}
	if r.DurationMS != nil {
		e.m["duration"] = *r.DurationMS
	}
	e.m["message"] = msg + " → allowed (" + firstOf(dec.Rule, dec.DecidedBy) + "), " + firstOf(detail, "succeeded")
	if r.OutputBytes != nil {
		e.unmapped("output_bytes", *r.OutputBytes)
	}
	e.unmapped("output_sha256", r.OutputSHA256)
	e.unmapped("output_preview", r.OutputPreview)
	if len(r.Programs) > 0 {
		e.unmapped("programs", r.Programs)
	}
	return e.done()
}

// execDenied is a Process Activity Launch the executor blocked at exec.
func (x *exporter) execDenied(s *src) map[string]any {
	rec := s.rec
	e := x.newEvent(s, ClassProcess, 1, "Launch")
	name := rec.Exe
	if len(rec.Argv) > 0 {
		name = rec.Argv[0]
	}
	proc := map[string]any{"name": firstOf(path.Base(name), "unknown"), "cmd_line": argvLine(rec.Argv)}
	if rec.PID > 0 {
		proc["pid"] = rec.PID
	}
	if rec.Exe != "" {
		proc["file"] = fileObj(rec.Exe, false)
	}
	e.m["process"] = proc
	e.actorDevice(x, rec, true)
	e.decision(x, rec)
	e.severity(severityMedium)
	e.status(false, "stopped at exec: "+firstOf(rec.Reason, rec.Rule, rec.Decision))
	e.unmapped("call_id", rec.CallID)
	e.m["message"] = "exec " + argvLine(rec.Argv) + " → " + firstOf(rec.Decision, "deny") + " at exec time (" + rec.Rule + ")"
	return e.done()
}

// network is one egress attempt: Refuse when the policy denied it, Fail
// when it was allowed but did not connect, Traffic otherwise.
func (x *exporter) network(s *src) map[string]any {
	rec := s.rec
	act, name := 6, "Traffic"
	switch {
	case rec.Decision != "allow":
		act, name = 5, "Refuse"
	case rec.Error != "":
		act, name = 4, "Fail"
	}
	e := x.newEvent(s, ClassNetwork, act, name)
	dst := endpoint(rec.NetHost, "")
	if rec.NetPort > 0 {
		dst["port"] = rec.NetPort
	}
	if ip := addrIP(rec.NetAddr); ip != "" {
		dst["ip"] = ip
	}
	if len(dst) == 0 {
		dst["name"] = "unknown"
	}
	e.m["dst_endpoint"] = dst
	ss := x.sess(rec.Session)
	src := map[string]any{"name": "sandbox " + rec.Session}
	if ss.container != "" {
		src["container"] = map[string]any{"uid": ss.container}
		e.profiles[profileContainer] = true
	}
	e.m["src_endpoint"] = src
	traffic := map[string]any{}
	if rec.BytesUp != nil {
		traffic["bytes_out"] = *rec.BytesUp
	}
	if rec.BytesDown != nil {
		traffic["bytes_in"] = *rec.BytesDown
	}
	if len(traffic) > 0 {
		var sum int64
		for _, v := range traffic {
			sum += v.(int64)
		}
		traffic["bytes"] = sum
		e.m["traffic"] = traffic
	}
	if rec.DurationMS != nil {
		e.m["duration"] = *rec.DurationMS
	}
	e.decision(x, rec)
	e.actorDevice(x, rec, true)
	e.profiles[profileHost] = true
	target := net.JoinHostPort(rec.NetHost, strconv.Itoa(rec.NetPort))
	switch act {
	case 5:
		e.severity(severityMedium)
		e.status(false, "refused by policy: "+firstOf(rec.Reason, rec.Rule))
		e.m["message"] = "egress to " + target + " refused (" + rec.Rule + ")"
	case 4:
		e.severity(severityLow)
		e.status(false, rec.Error)
		e.m["message"] = "egress to " + target + " allowed but failed: " + rec.Error
	default:
		e.status(true, "")
		e.m["message"] = "egress to " + target + " allowed (" + rec.Rule + ")"
	}
	e.unmapped("call_id", rec.CallID)
	return e.done()
}

var hostnameRE = regexp.MustCompile(`^(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]*[a-zA-Z0-9])\.)*([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9\-]*[A-Za-z0-9])$`)

// endpoint names a host: an IP literal as ip, a DNS name as hostname,
// anything else as name.
func endpoint(host, fallback string) map[string]any {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	switch {
	case h == "" && fallback == "":
		return map[string]any{}
	case h == "":
		return map[string]any{"name": fallback}
	case net.ParseIP(h) != nil:
		return map[string]any{"ip": net.ParseIP(h).String()}
	case hostnameRE.MatchString(h):
		return map[string]any{"hostname": h}
	}
	return map[string]any{"name": h}
}

// addrIP returns the IP of "host:port", "[v6]:port" or a bare address.
func addrIP(addr string) string {
	if addr == "" {
		return ""
	}
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		return ip.String()
	}
	return ""
}

func fileObj(p string, dir bool) map[string]any {
	f := map[string]any{"name": firstOf(path.Base(p), p, "unknown"), "path": p, "type_id": 1, "type": "Regular File"}
	if dir {
		f["type_id"], f["type"] = 2, "Folder"
	}
	if p == "" {
		delete(f, "path")
	}
	return f
}
