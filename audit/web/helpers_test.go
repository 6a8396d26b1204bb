package web

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
)

var t0 = time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// demoSession is a realistic session: a plan, model text, allowed and
// denied calls, an approval with its prompt, one refused for want of a
// terminal, network events, checkpoints of changes (one with a held git
// hook), an alarm and changed files.
func demoSession(id, user string, base float64, ended bool) []*audit.Record {
	p := audit.Ptr[int64]
	recs := []*audit.Record{
		{Time: at(base), Session: id, Event: audit.EventSessionStart, Task: "make the failing parser test pass",
			PolicyPath: "/home/" + user + "/proj/agentbox.yaml", PolicySHA256: strings.Repeat("3f9c", 16), Image: "agentbox/base:latest",
			ImageID: "sha256:7d1e", ContainerID: "c0ffee12", Workspace: "/home/" + user + "/proj", WorkspaceMode: "rw",
			Model: "gpt-4o-mini", Version: "0.4.0", User: user, Host: "build-07"},
		{Time: at(base + 1), Session: id, Event: audit.EventModelCall, Step: 0, TotalTokens: 420, DurationMS: p(900), FinishReason: "stop",
			Plan: []string{"run the tests", "fix the parser", "run the tests again"}, Text: `{"steps": ["run the tests", "fix the parser", "run the tests again"]}`},
		{Time: at(base + 2), Session: id, Event: audit.EventModelCall, Step: 1, TotalTokens: 1285, DurationMS: p(1200), FinishReason: "tool_calls",
			Text: "I will run the test suite first to see what fails."},
		{Time: at(base + 3), Session: id, Event: audit.EventToolCall, CallID: "call_1", Tool: "execute_bash", Phase: audit.PhaseDecision,
			Args: map[string]any{"command": "go test ./parser/..."}, Decision: "allow", Rule: "commands.allow[2]", DecidedBy: audit.DecidedByPolicy},
		{Time: at(base + 5), Session: id, Event: audit.EventToolCall, CallID: "call_1", Tool: "execute_bash", Phase: audit.PhaseResult,
			ExitCode: audit.Ptr(1), TimedOut: audit.Ptr(false), DurationMS: p(1830), OutputBytes: p(212),
			OutputPreview: "--- FAIL: TestParseQuoted (0.00s)\n    parser_test.go:41: got \"a\", want \"a b\"\nFAIL\n"},
		{Time: at(base + 6), Session: id, Event: audit.EventToolCall, CallID: "call_2", Tool: "read_file", Phase: audit.PhaseDecision,
			Args: map[string]any{"path": "/workspace/.env"}, Decision: "deny", Rule: "files.read.deny[0]", DecidedBy: audit.DecidedByPolicy, Reason: "secrets stay out of the sandbox"},
		{Time: at(base + 7), Session: id, Event: audit.EventNet, NetHost: "proxy.golang.org", NetPort: 443, NetAddr: "142.250.74.113:443",
			Decision: "allow", Rule: "network.allow[0]", BytesUp: p(1840), BytesDown: p(98211), DurationMS: p(310)},
		{Time: at(base + 8), Session: id, Event: audit.EventNet, NetHost: "paste.example.net", NetPort: 443, Decision: "deny", Rule: "network.default"},
		// An edit and its checkpoint; a command whose git hook is held.
		{Time: at(base + 8.1), Session: id, Event: audit.EventToolCall, CallID: "call_4", Tool: "write_file", Phase: audit.PhaseDecision,
			Args: map[string]any{"path": "parser/quote.go", "content": strings.Repeat("x", 2210)}, Decision: "allow", Rule: "files.write.allow[0]", DecidedBy: audit.DecidedByPolicy},
		{Time: at(base + 8.2), Session: id, Event: audit.EventToolCall, CallID: "call_4", Tool: "write_file", Phase: audit.PhaseResult, DurationMS: p(3), OutputBytes: p(24)},
		{Time: at(base + 8.3), Session: id, Event: audit.EventChanges, CallID: "call_4", Tool: "write_file", Reason: "checkpoint 1",
			Files: []audit.FileChange{{Path: "parser/quote.go", SHA256: strings.Repeat("9e", 32), SHA256Before: strings.Repeat("5a", 32), Bytes: 2210, Change: audit.ChangeModified}}},
		{Time: at(base + 8.4), Session: id, Event: audit.EventToolCall, CallID: "call_5", Tool: "execute_bash", Phase: audit.PhaseDecision,
			Args: map[string]any{"command": "cp testdata/quote_test.go parser/ && cp tools/pre-commit .git/hooks/pre-commit"}, Decision: "allow", Rule: "commands.allow[0]", DecidedBy: audit.DecidedByPolicy},
		{Time: at(base + 8.5), Session: id, Event: audit.EventToolCall, CallID: "call_5", Tool: "execute_bash", Phase: audit.PhaseResult,
			ExitCode: audit.Ptr(0), TimedOut: audit.Ptr(false), DurationMS: p(40), OutputBytes: p(0)},
		{Time: at(base + 8.6), Session: id, Event: audit.EventChanges, CallID: "call_5", Tool: "execute_bash", Reason: "checkpoint 2",
			Files: []audit.FileChange{{Path: "parser/quote_test.go", SHA256: strings.Repeat("41", 32), Bytes: 930, Change: audit.ChangeAdded}}},
		{Time: at(base + 8.6), Session: id, Event: audit.EventAlarm, CallID: "call_5", Tool: "execute_bash", Rule: "hazard:git-config",
			Path: ".git/hooks/pre-commit", What: "held added", Action: "held", Reason: ".git/hooks is configuration git reads or runs"},
		{Time: at(base + 9), Session: id, Event: audit.EventApproval, CallID: "call_3", Tool: "execute_bash", Decision: "allow", Rule: "commands.ask[0]",
			DecidedBy: audit.DecidedByUser, Approver: "interactive",
			Prompt: "agentbox: the policy asks before this execute_bash call:\n    git commit -am 'fix quoted fields'\n  rule:   commands.ask[0] \"git commit*\"\nAllow? [y]es / [n]o: "},
		{Time: at(base + 9.5), Session: id, Event: audit.EventToolCall, CallID: "call_3", Tool: "execute_bash", Phase: audit.PhaseDecision,
			Args: map[string]any{"command": "git commit -am 'fix quoted fields'"}, Decision: "allow", Rule: "commands.ask[0]", DecidedBy: audit.DecidedByUser},
		{Time: at(base + 10), Session: id, Event: audit.EventToolCall, CallID: "call_3", Tool: "execute_bash", Phase: audit.PhaseResult,
			ExitCode: audit.Ptr(0), TimedOut: audit.Ptr(false), DurationMS: p(95), OutputBytes: p(64), OutputPreview: "[main 1a2b3c4] fix quoted fields\n 1 file changed\n"},
		{Time: at(base + 11), Session: id, Event: audit.EventAlarm, Reason: "a hard link to /workspace/.env appeared and was removed", Rule: "files.read.deny[0]"},
		// An ask with no terminal to answer it: refused.
		{Time: at(base + 11.2), Session: id, Event: audit.EventApproval, CallID: "call_6", Tool: "execute_bash", Decision: "deny", Rule: "commands.ask[1]",
			DecidedBy: audit.DecidedByNoTerminal, Approver: "deny-all", Scope: audit.ScopeOnce, Reason: "the policy requires approval and no one could be asked (no terminal)"},
		{Time: at(base + 11.3), Session: id, Event: audit.EventToolCall, CallID: "call_6", Tool: "execute_bash", Phase: audit.PhaseDecision,
			Args: map[string]any{"command": "git push origin main"}, Decision: "deny", Rule: "commands.ask[1]", DecidedBy: audit.DecidedByNoTerminal},
	}
	if ended {
		recs = append(recs, &audit.Record{Time: at(base + 12), Session: id, Event: audit.EventSessionEnd, Status: "ok", Steps: 4,
			Answer: "Fixed quoted-field parsing; go test ./parser/... passes.",
			Files: []audit.FileChange{{Path: "parser/quote.go", SHA256: strings.Repeat("9e", 32), Bytes: 2210, Change: audit.ChangeModified},
				{Path: "parser/quote_test.go", SHA256: strings.Repeat("41", 32), Bytes: 930, Change: audit.ChangeAdded}}})
	}
	return recs
}

// writeDemoLog writes two sessions (the second still running) to a new
// log and returns its path.
func writeDemoLog(t testing.TB, dir, name string, key []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	w, err := audit.Open(path, audit.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	recs := append(demoSession("7f3c9a1e-0b4d-4e21-9a55-2c8e1f0d3b71", "alice", 0, true), demoSession("b81d44c2-5e6f-47a0-8c19-d2e3f4a5b6c7", "bob", 600, false)...)
	for _, r := range recs {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	return path
}
