package ocsf_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/ocsf"
)

// variedLog writes a log with every record type: two sessions (one never
// ended), model calls, allowed/denied/failing/timed-out/unfinished calls,
// file reads and writes, an exec-time denial and approval, alarms of every
// kind, proxy records (allowed, refused, failed, IPv6), approvals and
// errors; and a record kind this exporter does not know.
func variedLog(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(p, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	i := 0
	add := func(r audit.Record) {
		i++
		r.Time = now.Add(time.Duration(i) * time.Second)
		if r.Session == "" {
			r.Session = "s1"
		}
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	dec := func(id, tool string, args map[string]any, d, rule string) audit.Record {
		return audit.Record{Event: audit.EventToolCall, Phase: audit.PhaseDecision, CallID: id, Tool: tool, Args: args,
			Decision: d, Rule: rule, DecidedBy: audit.DecidedByPolicy, Reason: rule + " matched"}
	}
	res := func(id, tool string, code int, timedOut bool) audit.Record {
		return audit.Record{Event: audit.EventToolCall, Phase: audit.PhaseResult, CallID: id, Tool: tool, Decision: "allow",
			ExitCode: audit.Ptr(code), TimedOut: audit.Ptr(timedOut), DurationMS: audit.Ptr[int64](7), OutputBytes: audit.Ptr[int64](3),
			OutputSHA256: strings.Repeat("ab", 32), OutputPreview: "ok\n", Truncated: audit.Ptr(false),
			Programs: []audit.Program{{Name: "ls", Count: 1}}}
	}
	add(audit.Record{Event: audit.EventSessionStart, Task: "fix it", PolicyPath: "/p.yaml", PolicySHA256: strings.Repeat("cd", 32),
		Image: "agentbox/base:latest", ImageID: "sha256:99", ContainerID: "c0ffee", Workspace: "/w", WorkspaceMode: "rw",
		Model: "gpt-4o-mini", Version: "0.1.0", User: "dev", Host: "build-1"})
	add(audit.Record{Event: audit.EventModelCall, Step: 1, PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, FinishReason: "tool_calls", DurationMS: audit.Ptr[int64](900)})
	add(dec("c1", "execute_bash", map[string]any{"command": "ls"}, "allow", "commands.allow[0]"))
	add(res("c1", "execute_bash", 0, false))
	add(dec("c2", "execute_bash", map[string]any{"command": "sudo id"}, "deny", "commands.deny[0]"))
	add(dec("c3", "execute_bash", map[string]any{"command": "make"}, "allow", "commands.allow[1]"))
	add(audit.Record{Event: audit.EventExecDenied, CallID: "c3", Tool: "execute_bash", Decision: "deny", Rule: "commands.deny[2]",
		Reason: "mount: denied", DecidedBy: audit.DecidedByExecutor, Argv: []string{"mount", "-t", "tmpfs"}, PID: 42, Exe: "/usr/bin/mount"})
	add(audit.Record{Event: audit.EventApproval, CallID: "c3", Tool: "execute_bash", Decision: "allow", Rule: "commands.ask[0]",
		DecidedBy: "user", Approver: "dev", Scope: audit.ScopeSession, Argv: []string{"git", "config", "-l"}, PID: 43})
	add(audit.Record{Event: audit.EventAlarm, CallID: "c3", Tool: "execute_bash", Rule: "files.write.deny[0]", Path: ".git/hooks/pre-commit", What: "created", Action: "removed"})
	add(res("c3", "execute_bash", 2, false))
	add(dec("c4", "read_file", map[string]any{"path": "src/main.go"}, "allow", "files.read.allow[0]"))
	add(audit.Record{Event: audit.EventToolCall, Phase: audit.PhaseResult, CallID: "c4", Tool: "read_file", Decision: "allow", DurationMS: audit.Ptr[int64](1), OutputBytes: audit.Ptr[int64](100)})
	add(dec("c5", "write_file", map[string]any{"path": "out.txt", "content": "x"}, "allow", "files.write.allow[0]"))
	add(audit.Record{Event: audit.EventToolCall, Phase: audit.PhaseResult, CallID: "c5", Tool: "write_file", Decision: "deny", Rule: "files.write.deny[1]", Error: "resolves to .env", DecidedBy: audit.DecidedByPolicy})
	add(dec("c6", "read_file", map[string]any{"path": ".env"}, "deny", "files.read.deny[0]"))
	add(audit.Record{Event: audit.EventApproval, CallID: "c7", Tool: "execute_bash", Decision: "deny", Rule: "commands.ask[1]", DecidedBy: "no-terminal", Scope: audit.ScopeOnce, Prompt: "curl example.com"})
	add(dec("c7", "execute_bash", map[string]any{"command": "curl example.com"}, "deny", "commands.ask[1]"))
	add(dec("c8", "execute_bash", map[string]any{"command": "sleep 99"}, "allow", "commands.allow[2]"))
	add(res("c8", "execute_bash", 137, true))
	wouldAsk := dec("c9", "execute_bash", map[string]any{"command": "git push"}, audit.DecisionWouldAsk, "commands.ask[0]")
	wouldAsk.DecidedBy = audit.DecidedByLearn // a learning run: it ran
	add(wouldAsk)
	add(res("c9", "execute_bash", 0, false))
	add(audit.Record{Event: audit.EventNet, NetHost: "proxy.golang.org", NetPort: 443, NetAddr: "142.250.1.1:443", Decision: "allow", Rule: "network.allow[0]", DurationMS: audit.Ptr[int64](50), BytesUp: audit.Ptr[int64](500), BytesDown: audit.Ptr[int64](9000)})
	add(audit.Record{Event: audit.EventNet, NetHost: "evil.example", NetPort: 443, Decision: "deny", Rule: "network.default", Reason: "not allowed", BytesUp: audit.Ptr[int64](0), BytesDown: audit.Ptr[int64](0)})
	add(audit.Record{Event: audit.EventNet, NetHost: "v6.example", NetPort: 443, NetAddr: "[fd00::1]:443", Decision: "allow", Rule: "network.allow[1]", Error: "connection refused", BytesUp: audit.Ptr[int64](0), BytesDown: audit.Ptr[int64](0)})
	add(audit.Record{Event: audit.EventNet, NetHost: "2001:db8::7", NetPort: 80, Decision: "deny", Rule: "network.deny_addresses[0]"})
	add(audit.Record{Event: audit.EventError, CallID: "c9", Tool: "nope", Args: map[string]any{"arguments": "{}"}, Error: "unknown tool nope"})
	add(dec("c10", "execute_bash", map[string]any{"command": "true"}, "allow", "commands.allow[0]"))
	add(audit.Record{Event: audit.EventSessionEnd, Status: "ok", Steps: 3, Answer: "done", Files: []audit.FileChange{{Path: "out.txt", Bytes: 1, Change: audit.ChangeAdded}}})
	add(audit.Record{Session: "s2", Event: audit.EventSessionStart, Task: "other", Version: "0.1.0"})
	add(audit.Record{Session: "s2", Event: audit.EventError, Step: 1, Error: "model: 500"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Alarm kinds of the exec-time tracer, the credential proxy and the
	// staged workspace, and a record kind newer than the exporter, as other
	// writers put them on disk (members Record may not know).
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, _ := os.ReadFile(p)
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	prev := lines[len(lines)-1]
	seq := len(lines)
	for _, extra := range []string{
		`"event":"alarm","call_id":"c3","tool":"execute_bash","rule":"commands.unknown_binaries","argv":["python3","-c","x"],"path":"/usr/bin/python3","what":"unexpected_exec","action":"reported","parents":["bash (12)","make (11)"]`,
		`"event":"alarm","what":"secret_misuse","action":"refused","net_host":"evil.example","net_method":"POST","secret":"GITHUB_TOKEN"`,
		`"event":"alarm","kind":"held_change","path":".github/workflows/ci.yml","what":"held","action":"held for review"`,
		`"event":"changes","call_id":"c3","tool":"execute_bash","reason":"checkpoint 1","files":[{"path":"a.txt","sha256":"` + strings.Repeat("a1", 32) + `","bytes":4,"change":"added"},{"path":"src/x.go","sha256":"` + strings.Repeat("b2", 32) + `","sha256_before":"` + strings.Repeat("b1", 32) + `","bytes":9,"change":"modified"},{"path":"old.txt","sha256_before":"` + strings.Repeat("c1", 32) + `","bytes":0,"change":"deleted"},{"path":"…[2 more files not listed]","bytes":0,"change":"omitted"}]`,
		`"event":"changes","call_id":"c3","reason":"fork of /w after checkpoint 1","workspace":"/f"`,
		`"event":"session_end","status":"ok","steps":1,"files":[{"path":"a.txt","sha256":"` + strings.Repeat("a1", 32) + `","bytes":4,"change":"added"}]`,
	} {
		seq++
		line := []byte(`{"v":1,"seq":` + itoa(seq) + `,"time":"2026-12-01T12:10:00.000000Z","session":"s2",` + extra + `,"prev":"` + sha(prev) + `"}`)
		f.Write(append(line, '\n'))
		prev = line
	}
	return p
}

func TestExportValidatesAgainstOCSF(t *testing.T) {
	s := loadSchema(t)
	p := variedLog(t)
	var out bytes.Buffer
	f, _ := os.Open(p)
	defer f.Close()
	st, err := ocsf.Export(&out, f)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(p)
	hashes := map[string]bool{}
	for _, l := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		hashes[sha(l)] = true
	}
	classes := map[float64]int{}
	var events []map[string]any
	for i, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		events = append(events, ev)
		classes[ev["class_uid"].(float64)]++
		for _, e := range s.validate(ev) {
			t.Errorf("event %d (%v %v): %s", i+1, ev["class_name"], ev["activity_name"], e)
		}
		// A record with files is one event per file: "<hash>/<n>".
		if uid, _ := ev["metadata"].(map[string]any)["uid"].(string); !hashes[strings.Split(uid, "/")[0]] {
			t.Errorf("event %d: metadata.uid %q is not the hash of a record", i+1, uid)
		}
	}
	// 37 records: the 11 calls become 11 events (two decisions + results
	// merged), so 37 - 7 merged results = 30; the changes record's 3 files
	// are 3 events and s1's session_end's file 1 more (s2's repeats its
	// changes record: no more): 30 + 2 + 1 = 33.
	if st.Events != len(events) || len(events) != 33 || st.Unfinished != 1 {
		t.Errorf("events %d (stats %+v), want 33 with 1 unfinished", len(events), st)
	}
	want := map[float64]int{6002: 4, 6003: 1, 1007: 8, 1001: 7, 3005: 2, 2004: 4, 4001: 4, 0: 3}
	for c, n := range want {
		if classes[c] != n {
			t.Errorf("class %v: %d events, want %d (all: %v)", c, classes[c], n, classes)
		}
	}
	checkMapping(t, events)
	if dump := os.Getenv("OCSF_SCHEMA_USED"); dump != "" { // to prune the test data
		var used []string
		for f := range s.used {
			used = append(used, f)
		}
		os.WriteFile(dump, []byte(strings.Join(used, "\n")+"\n"), 0o644)
	}
}
