package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 18, 0, 0, 123456000, time.UTC)

// at returns t0 plus d seconds.
func at(d float64) time.Time { return t0.Add(time.Duration(d * float64(time.Second))) }

// sampleSession returns the records of one small session: start, a model
// call, an allowed call with its result, a denied call, an ask approved by a
// user with a failing result, and the end (unless ended is false).
func sampleSession(id string, base float64, ended bool) []*Record {
	recs := []*Record{
		{Time: at(base), Session: id, Event: EventSessionStart, Task: "fix the failing test",
			PolicyPath: "/home/u/agentbox.yaml", PolicySHA256: strings.Repeat("ab", 32), Image: "agentbox/base:latest",
			ImageID: "sha256:1234", ContainerID: "c0ffee", Workspace: "/home/u/proj", WorkspaceMode: "rw",
			Model: "gpt-4o-mini", Version: "0.1.0", User: "u", Host: "box"},
		{Time: at(base + 1), Session: id, Event: EventModelCall, Step: 1, PromptTokens: 1200, CompletionTokens: 85,
			TotalTokens: 1285, FinishReason: "tool_calls", DurationMS: Ptr[int64](1200)},
		{Time: at(base + 2), Session: id, Event: EventToolCall, CallID: "call_1", Tool: "execute_bash",
			Args: map[string]any{"command": "ls -la"}, Phase: PhaseDecision, Decision: "allow", Rule: "commands.allow[0]", DecidedBy: DecidedByPolicy},
		{Time: at(base + 2.5), Session: id, Event: EventToolCall, CallID: "call_1", Tool: "execute_bash", Phase: PhaseResult,
			ExitCode: Ptr(0), TimedOut: Ptr(false), DurationMS: Ptr[int64](3), OutputBytes: Ptr[int64](12),
			OutputSHA256: strings.Repeat("cd", 32), OutputPreview: "total 0\nfoo\n", Truncated: Ptr(false)},
		{Time: at(base + 3), Session: id, Event: EventToolCall, CallID: "call_2", Tool: "execute_bash",
			Args: map[string]any{"command": "sudo rm -rf /"}, Phase: PhaseDecision, Decision: "deny", Rule: "commands.deny[0]",
			DecidedBy: DecidedByPolicy, Reason: "sudo: matched commands.deny[0]"},
		{Time: at(base + 4), Session: id, Event: EventToolCall, CallID: "call_3", Tool: "execute_bash",
			Args: map[string]any{"command": "make test"}, Phase: PhaseDecision, Decision: "allow", Rule: "commands.default",
			DecidedBy: DecidedByUser},
		{Time: at(base + 4.2), Session: id, Event: EventApproval, CallID: "call_3", Tool: "execute_bash", Decision: "allow", Approver: "u"},
		{Time: at(base + 5), Session: id, Event: EventToolCall, CallID: "call_3", Tool: "execute_bash", Phase: PhaseResult,
			ExitCode: Ptr(2), TimedOut: Ptr(false), DurationMS: Ptr[int64](1500), OutputBytes: Ptr[int64](20), OutputPreview: "FAIL: TestX\n"},
	}
	if ended {
		recs = append(recs, &Record{Time: at(base + 6), Session: id, Event: EventSessionEnd, Status: "done", Steps: 3,
			Answer: "fixed", Files: []FileChange{{Path: "main.go", SHA256: strings.Repeat("ef", 32), Bytes: 120, Change: ChangeModified}}})
	}
	return recs
}

// writeLog writes recs to a new log in a temp dir and returns its path.
func writeLog(t testing.TB, opts Options, recs ...*Record) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "audit.jsonl")
	w, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, r := range recs {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// sampleLog is two sessions; the second never ended.
func sampleLog(t testing.TB, opts Options) string {
	recs := append(sampleSession("sess-aaaaaaaa-1", 0, true), sampleSession("sess-bbbbbbbb-2", 100, false)...)
	return writeLog(t, opts, recs...)
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func joinLines(lines []string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func verifyBytes(t testing.TB, b []byte, key []byte, expect string) VerifyReport {
	t.Helper()
	rep, err := Verify(bytes.NewReader(b), key, expect)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func verifyFile(t testing.TB, path string, key []byte, expect string) VerifyReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return verifyBytes(t, b, key, expect)
}
