package otlp_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/otlp"
	"github.com/agentbox/agentbox/audit/otlp/otlptest"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// writeSession appends one session's records through w.
func writeSession(t *testing.T, w *audit.Writer, id string) int {
	t.Helper()
	now := time.Now().Add(-time.Minute)
	recs := []*audit.Record{
		{Event: audit.EventSessionStart, Task: "fix it", Model: "gpt-4o-mini", Image: "agentbox/base:latest", Version: "0.1.0"},
		{Event: audit.EventModelCall, Step: 1, PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120, FinishReason: "tool_calls", DurationMS: audit.Ptr[int64](800)},
		{Event: audit.EventToolCall, Phase: audit.PhaseDecision, CallID: "c1", Tool: "execute_bash", Args: map[string]any{"command": "make test"}, Decision: "allow", Rule: "commands.allow[0]", DecidedBy: "policy"},
		{Event: audit.EventExecDenied, CallID: "c1", Tool: "execute_bash", Decision: "deny", Rule: "commands.deny[1]", Argv: []string{"mount", "-a"}, PID: 7, Exe: "/usr/bin/mount"},
		{Event: audit.EventToolCall, Phase: audit.PhaseResult, CallID: "c1", Tool: "execute_bash", Decision: "allow", ExitCode: audit.Ptr(2), DurationMS: audit.Ptr[int64](40)},
		{Event: audit.EventToolCall, Phase: audit.PhaseDecision, CallID: "c2", Tool: "execute_bash", Args: map[string]any{"command": "sudo id"}, Decision: "deny", Rule: "commands.deny[0]"},
		{Event: audit.EventNet, NetHost: "pypi.org", NetPort: 443, Decision: "allow", Rule: "network.allow[0]"},
		{Event: audit.EventSessionEnd, Status: "ok", Steps: 1},
	}
	for i, r := range recs {
		r.Session, r.Time = id, now.Add(time.Duration(i)*time.Second)
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	return len(recs)
}

// Against a real OTLP/HTTP receiver: one trace per session with the
// session -> tool call -> exec hierarchy and its attributes, and every
// record as a log record linked to its span.
func TestSinkSendsTracesAndLogs(t *testing.T) {
	rcv := otlptest.New(t, false)
	sink, err := otlp.New(context.Background(), otlp.Config{Endpoint: rcv.URL})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(path, audit.Options{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	n := writeSession(t, w, "sess-1")
	if err := w.Close(); err != nil { // flushes the sink
		t.Fatal(err)
	}
	spans, logs := rcv.Got()
	byName := map[string][]map[string]string{}
	ids := map[string]string{} // span name -> span id
	parent := map[string]string{}
	traces := map[string]bool{}
	for _, s := range spans {
		a := otlptest.Attrs(s.Attributes)
		byName[s.Name] = append(byName[s.Name], a)
		if a["gen_ai.tool.call.id"] == "c2" {
			continue // the denied call: the hierarchy is checked on c1
		}
		ids[s.Name] = hex.EncodeToString(s.SpanId)
		parent[s.Name] = hex.EncodeToString(s.ParentSpanId)
		traces[hex.EncodeToString(s.TraceId)] = true
	}
	if len(traces) != 1 {
		t.Fatalf("%d traces, want 1 per session: %v", len(traces), byName)
	}
	for _, name := range []string{"agentbox session", "chat gpt-4o-mini", "execute_tool execute_bash", "exec bash", "exec mount"} {
		if len(byName[name]) == 0 {
			t.Fatalf("no span %q: %v", name, byName)
		}
	}
	if parent["execute_tool execute_bash"] != ids["agentbox session"] || parent["exec bash"] != ids["execute_tool execute_bash"] || parent["chat gpt-4o-mini"] != ids["agentbox session"] {
		t.Errorf("hierarchy: %v / %v", parent, ids)
	}
	exec := byName["exec bash"][0]
	if exec["process.command_args"] != "bash -c make test" || exec["process.exit.code"] != "2" || exec["agentbox.call_id"] != "c1" || exec["agentbox.decision"] != "allow" {
		t.Errorf("exec span: %v", exec)
	}
	denied := byName["exec mount"][0]
	if denied["process.command_args"] != "mount -a" || denied["agentbox.decision"] != "deny" || denied["agentbox.rule"] != "commands.deny[1]" {
		t.Errorf("exec_denied span: %v", denied)
	}
	var deniedCall bool
	for _, a := range byName["execute_tool execute_bash"] {
		deniedCall = deniedCall || (a["agentbox.decision"] == "deny" && a["agentbox.rule"] == "commands.deny[0]" && a["gen_ai.tool.call.id"] == "c2")
	}
	if !deniedCall {
		t.Errorf("denied call span: %v", byName["execute_tool execute_bash"])
	}
	if m := byName["chat gpt-4o-mini"][0]; m["gen_ai.usage.input_tokens"] != "100" {
		t.Errorf("model span: %v", m)
	}
	// Every record is a log record whose body is its line.
	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(logs) != n {
		t.Fatalf("%d log records, want %d", len(logs), n)
	}
	linked := 0
	for _, l := range logs {
		body := l.Body.GetStringValue()
		if !bytes.Contains(raw, []byte(body)) || body == "" {
			t.Errorf("log body is not a line of the log: %q", body)
		}
		if len(l.TraceId) > 0 && traces[hex.EncodeToString(l.TraceId)] {
			linked++
		}
		if a := otlptest.Attrs(l.Attributes); a["agentbox.session"] != "sess-1" || a["agentbox.event"] == "" {
			t.Errorf("log attributes: %v", a)
		}
	}
	if linked != n || len(lines) != n {
		t.Errorf("%d of %d log records linked to the trace", linked, n)
	}
}

// A stuck collector never blocks or fails the session: records beyond the
// bounded queue are dropped and counted in session_end.
func TestSinkStuckCollectorDropsAndCounts(t *testing.T) {
	rcv := otlptest.New(t, true)
	// Each export waits for the stuck collector until the timeout: while
	// the first one waits, the queue of 2 fills and the rest is dropped.
	sink, err := otlp.New(context.Background(), otlp.Config{Endpoint: rcv.URL, Queue: 2, Batch: 1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(path, audit.Options{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	writeSession(t, w, "sess-stuck")
	if err := w.Close(); err != nil {
		t.Fatalf("a stuck collector failed the log: %v", err)
	}
	recs, err := func() ([]audit.Record, error) { f, _ := os.Open(path); defer f.Close(); return audit.ReadAll(f) }()
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1]
	if last.Event != audit.EventSessionEnd || last.OTLPDropped == 0 {
		t.Fatalf("session_end does not count the drops: %+v", last)
	}
	// The log itself is whole.
	f, _ := os.Open(path)
	defer f.Close()
	if rep, _ := audit.Verify(f, nil, ""); !rep.Intact || rep.Records != 8 {
		t.Fatalf("%s", rep)
	}
}

// audit export --format otlp: an existing log, every record sent (waiting
// for room instead of dropping).
func TestExportExistingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range 30 {
		n += writeSession(t, w, "s-"+itoa(int64(i)))
	}
	w.Close()
	rcv := otlptest.New(t, false)
	f, _ := os.Open(path)
	defer f.Close()
	sent, err := otlp.Export(context.Background(), otlp.Config{Endpoint: rcv.URL, Queue: 4}, f)
	if err != nil || sent != n {
		t.Fatalf("sent %d of %d: %v", sent, n, err)
	}
	spans, logs := rcv.Got()
	sessions := 0
	for _, s := range spans {
		if s.Name == "agentbox session" {
			sessions++
		}
	}
	if len(logs) != n || sessions != 30 {
		t.Fatalf("%d logs (want %d), %d session spans (want 30)", len(logs), n, sessions)
	}
	// A dead collector is an error for export (nothing was delivered).
	dead := otlptest.New(t, false)
	dead.Close()
	f.Seek(0, 0)
	if _, err := otlp.Export(context.Background(), otlp.Config{Endpoint: dead.URL, Timeout: time.Second}, f); err == nil {
		t.Fatal("export to a dead collector reported success")
	}
}
