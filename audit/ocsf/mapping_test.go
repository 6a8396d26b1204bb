package ocsf_test

import (
	"fmt"
	"strings"
	"testing"
)

// get walks a dotted path through an event.
func get(ev map[string]any, p string) any {
	var v any = ev
	for _, k := range strings.Split(p, ".") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func find(events []map[string]any, pred func(map[string]any) bool) map[string]any {
	for _, ev := range events {
		if pred(ev) {
			return ev
		}
	}
	return nil
}

func byMessage(events []map[string]any, sub string) map[string]any {
	return find(events, func(ev map[string]any) bool { s, _ := ev["message"].(string); return strings.Contains(s, sub) })
}

// checkMapping asserts what each record type became.
func checkMapping(t *testing.T, events []map[string]any) {
	t.Helper()
	want := func(ev map[string]any, what string, kv ...any) {
		t.Helper()
		if ev == nil {
			t.Errorf("%s: no event", what)
			return
		}
		for i := 0; i < len(kv); i += 2 {
			if got := fmt.Sprint(get(ev, kv[i].(string))); got != fmt.Sprint(kv[i+1]) {
				t.Errorf("%s: %s = %s, want %v", what, kv[i], got, kv[i+1])
			}
		}
	}
	want(byMessage(events, "egress to evil.example"), "refused egress", "activity_id", 5, "action_id", 2, "disposition_id", 2, "status_id", 2)
	want(byMessage(events, "egress to proxy.golang.org"), "allowed egress", "activity_id", 6, "action_id", 1, "dst_endpoint.ip", "142.250.1.1", "traffic.bytes_in", 9000, "traffic.bytes_out", 500)
	want(byMessage(events, "egress to v6.example"), "failed egress", "activity_id", 4, "status_id", 2, "dst_endpoint.ip", "fd00::1", "dst_endpoint.hostname", "v6.example")
	want(byMessage(events, "egress to [2001:db8::7]:80"), "IPv6 literal", "activity_id", 5, "dst_endpoint.ip", "2001:db8::7")
	want(byMessage(events, "exec mount -t tmpfs"), "exec_denied", "class_uid", 1007, "action_id", 2, "disposition_id", 2, "process.pid", 42, "process.file.path", "/usr/bin/mount", "status_id", 2)
	want(byMessage(events, "execute_bash make"), "call with failing result", "action_id", 1, "status_id", 2, "exit_code", 2, "unmapped.agentbox.call_id", "c3")
	want(byMessage(events, "execute_bash git push"), "learning run's would_ask", "action_id", 1, "disposition_id", 17, "status_id", 1, "exit_code", 0)
	want(byMessage(events, "execute_bash sudo id"), "denied call", "action_id", 2, "status_id", 2, "severity_id", 3)
	want(byMessage(events, "execute_bash sleep 99"), "timed out", "status_detail", "timed out", "exit_code", 137)
	want(byMessage(events, "execute_bash true"), "unfinished call", "status_id", 0)
	want(byMessage(events, "write_file out.txt"), "write denied at the file layer", "class_uid", 1001, "activity_id", 3, "action_id", 2, "file.path", "out.txt")
	want(byMessage(events, "read_file src/main.go"), "read", "activity_id", 2, "status_id", 1)
	want(byMessage(events, "started: fix it"), "session start", "class_uid", 6002, "activity_id", 3, "device.container.uid", "c0ffee")
	want(byMessage(events, "ended: ok"), "session end", "activity_id", 4, "status_id", 1)
	want(byMessage(events, "model call"), "model call", "class_uid", 6003, "api.service.name", "gpt-4o-mini", "duration", 900)
	want(byMessage(events, "dev allow"), "approval", "class_uid", 3005, "activity_id", 1, "user.name", "dev", "unmapped.agentbox.scope", "session")
	want(byMessage(events, "no-terminal deny"), "refused approval", "activity_id", 99)
	for _, kind := range []string{"created", "unexpected_exec", "secret_misuse", "held_change"} {
		ev := find(events, func(ev map[string]any) bool {
			ts, _ := get(ev, "finding_info.types").([]any)
			return len(ts) == 1 && ts[0] == kind
		})
		want(ev, "alarm "+kind, "class_uid", 2004, "severity_id", 4)
	}
	want(byMessage(events, "alarm unexpected_exec"), "unexpected_exec", "finding_info.title", "unexpected_exec: /usr/bin/python3", "unmapped.agentbox.parents", "[bash (12) make (11)]")
	want(byMessage(events, "alarm secret_misuse"), "secret_misuse", "finding_info.title", "secret_misuse: GITHUB_TOKEN", "unmapped.agentbox.net_host", "evil.example")
	want(byMessage(events, "error: model: 500"), "error", "class_uid", 0, "status_id", 2)
	want(byMessage(events, "changes"), "changes without files (a fork)", "class_uid", 0, "activity_name", "changes")
	// The files of a changes record and of session_end: File System
	// Activity, one per file, with the content's SHA-256.
	for _, c := range []struct{ msg, name, sum string }{
		{"added a.txt (4 bytes) by call c3", "Create", strings.Repeat("a1", 32)},
		{"modified src/x.go (9 bytes) by call c3", "Update", strings.Repeat("b2", 32)},
		{"deleted old.txt (0 bytes) by call c3", "Delete", strings.Repeat("c1", 32)},
		{"added out.txt (1 bytes) by session s1", "Create", ""},
	} {
		ev := byMessage(events, c.msg)
		want(ev, c.msg, "class_uid", 1001, "activity_name", c.name, "status_id", 1)
		hashes, _ := get(ev, "file.hashes").([]any)
		var sum any
		if len(hashes) == 1 {
			sum = hashes[0].(map[string]any)["value"]
		}
		if (c.sum == "" && hashes != nil) || (c.sum != "" && (sum != c.sum || hashes[0].(map[string]any)["algorithm_id"] != 3.0)) {
			t.Errorf("%s: file.hashes %v, want SHA-256 %q", c.msg, hashes, c.sum)
		}
	}
	want(byMessage(events, "modified src/x.go"), "modified file", "file.size", 9, "unmapped.agentbox.sha256_before", strings.Repeat("b1", 32))
	if ev := byMessage(events, "more files not listed"); ev != nil {
		t.Errorf("the marker of files past the record's bound became an event: %v", ev["message"])
	}
	// One event per call.
	calls := map[string]int{}
	for _, ev := range events {
		if id, _ := get(ev, "unmapped.agentbox.call_id").(string); id != "" && (ev["class_uid"] == 1007.0 || ev["class_uid"] == 1001.0) && get(ev, "unmapped.agentbox.change") == nil && get(ev, "unmapped.agentbox.tool") != nil {
			calls[id]++
		}
	}
	for id, n := range calls {
		if n != 1 {
			t.Errorf("call %s: %d events, want 1", id, n)
		}
	}
}

// TestValidatorRejects shows the validator fails events the way the
// ocsf-server validator does: each mutation of a valid event is an error.
func TestValidatorRejects(t *testing.T) {
	s := loadSchema(t)
	valid := func() map[string]any {
		return map[string]any{
			"class_uid": 4001.0, "category_uid": 4.0, "activity_id": 5.0, "type_uid": 400105.0, "severity_id": 3.0, "time": 1.0,
			"action_id": 2.0, "disposition_id": 2.0,
			"metadata":     map[string]any{"version": "1.3.0", "product": map[string]any{"vendor_name": "agentbox", "name": "agentbox"}, "profiles": []any{"security_control"}},
			"dst_endpoint": map[string]any{"ip": "fd00::1", "port": 443.0},
		}
	}
	if errs := s.validate(valid()); len(errs) > 0 {
		t.Fatalf("the valid event fails: %v", errs)
	}
	for name, mut := range map[string]func(map[string]any){
		"undefined attribute":  func(e map[string]any) { e["policy"] = map[string]any{"name": "x"} },
		"profile not declared": func(e map[string]any) { e["metadata"].(map[string]any)["profiles"] = []any{} },
		"unknown profile":      func(e map[string]any) { e["metadata"].(map[string]any)["profiles"] = []any{"security_control", "nope"} },
		"required missing":     func(e map[string]any) { delete(e, "dst_endpoint") },
		"required object member": func(e map[string]any) {
			delete(e["metadata"].(map[string]any)["product"].(map[string]any), "vendor_name")
		},
		"enum":                       func(e map[string]any) { e["activity_id"], e["type_uid"] = 42.0, 400142.0 },
		"type_uid":                   func(e map[string]any) { e["type_uid"] = 400106.0 },
		"category":                   func(e map[string]any) { e["category_uid"] = 1.0 },
		"bad IPv6":                   func(e map[string]any) { e["dst_endpoint"].(map[string]any)["ip"] = "[fd00" },
		"type":                       func(e map[string]any) { e["time"] = "now" },
		"constraint":                 func(e map[string]any) { e["dst_endpoint"] = map[string]any{"port": 443.0} },
		"caption":                    func(e map[string]any) { e["activity_name"] = "Traffic" },
		"version":                    func(e map[string]any) { e["metadata"].(map[string]any)["version"] = "1.1.0" },
		"container without profile":  func(e map[string]any) { e["dst_endpoint"].(map[string]any)["container"] = map[string]any{"uid": "c"} },
		"object member not in class": func(e map[string]any) { e["dst_endpoint"].(map[string]any)["policy"] = "x" },
	} {
		ev := valid()
		mut(ev)
		if errs := s.validate(ev); len(errs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}
