package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit/otlp/otlptest"
	"github.com/agentbox/agentbox/internal/testutil"
)

// exec --otlp-endpoint streams the session to a collector: a trace with
// the tool call and its exec span (argv, exit code, decision), and the
// records as logs.
func TestExecStreamsOTLP(t *testing.T) {
	testutil.RequireDocker(t)
	rcv := otlptest.New(t, false)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, nil, "exec", "--workspace", t.TempDir(), "--audit", log, "--otlp-endpoint", rcv.URL, "--", "echo traced; exit 3")
	if r.code != 3 || !strings.Contains(r.stdout, "traced") {
		t.Fatalf("exec: %d %q %q", r.code, r.stdout, r.stderr)
	}
	spans, logs := rcv.Got()
	var sawExec bool
	names := map[string]bool{}
	for _, s := range spans {
		names[s.Name] = true
		a := otlptest.Attrs(s.Attributes)
		if s.Name == "exec bash" && a["process.command_args"] == "bash -c echo traced; exit 3" && a["process.exit.code"] == "3" && a["agentbox.decision"] == "allow" {
			sawExec = true
		}
	}
	if !sawExec || !names["agentbox session"] || !names["execute_tool execute_bash"] {
		t.Fatalf("spans: %v", names)
	}
	events := map[string]int{}
	for _, l := range logs {
		events[otlptest.Attrs(l.Attributes)["agentbox.event"]]++
	}
	if events["session_start"] != 1 || events["tool_call"] != 2 || events["session_end"] != 1 {
		t.Fatalf("log records by event: %v", events)
	}
}
