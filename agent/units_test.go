package agent

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentbox/agentbox/policy"
)

func TestParsePlan(t *testing.T) {
	good := []string{
		`{"steps": ["a", "b", "c"]}`,
		"Here is the plan:\n```json\n{\"steps\": [\"a\", \"b\", \"c\"]}\n```",
		`["a", "b", "c"]`,
	}
	for _, s := range good {
		if steps, ok := parsePlan(s); !ok || strings.Join(steps, ",") != "a,b,c" {
			t.Errorf("parsePlan(%q) = %v %v", s, steps, ok)
		}
	}
	bad := []string{"", "I will do it", `{"steps": []}`, `{"steps": ["a", 3]}`, `{"steps": ["a", ""]}`,
		`{"steps": ["1","2","3","4","5","6","7","8","9"]}`, `{"plan": "x"}`}
	for _, s := range bad {
		if steps, ok := parsePlan(s); ok {
			t.Errorf("parsePlan(%q) = %v, want fallback", s, steps)
		}
	}
}

func TestCapText(t *testing.T) {
	s := strings.Repeat("é", 3000) // 6000 bytes
	c := capText(s, 1000)
	if len(c) > 1000 || !utf8.ValidString(c) || !strings.Contains(c, "bytes cut by agentbox") {
		t.Errorf("capText: %d bytes, valid %v", len(c), utf8.ValidString(c))
	}
	if capText("short", 1000) != "short" {
		t.Error("short text changed")
	}
}

func TestElide(t *testing.T) {
	big := strings.Repeat("x", 4000)
	msgs := []Message{
		{Role: RoleSystem, Content: "sys"},
		{Role: RoleUser, Content: "task"},
		{Role: RoleAssistant, Content: "", ToolCalls: nil},
		{Role: RoleTool, ToolCallID: "a", Content: big},
		{Role: RoleTool, ToolCallID: "small", Content: "tiny"},
		{Role: RoleAssistant},
		{Role: RoleTool, ToolCallID: "b", Content: big},
		{Role: RoleAssistant},
		{Role: RoleTool, ToolCallID: "c", Content: big},
	}
	meta := map[string]outputMeta{"a": {bytes: 123456, sha: "feed"}}
	if n := elide(msgs, 100000, meta); n != 0 {
		t.Fatalf("elided %d under budget", n)
	}
	n := elide(msgs, 1500, meta) // ~6000 bytes: keep one big output
	if n != 2 {
		t.Fatalf("elided %d, want 2", n)
	}
	if msgs[3].Content != "[output elided by agentbox to save context; 123456 bytes, sha256 feed; full output is in the audit log]" {
		t.Errorf("note = %q", msgs[3].Content)
	}
	if !strings.HasPrefix(msgs[6].Content, elidedPrefix) || msgs[8].Content != big || msgs[4].Content != "tiny" {
		t.Errorf("wrong messages elided")
	}
	// Idempotent: notes are not elided again.
	if n := elide(msgs, 1, meta); n != 0 {
		t.Errorf("elided %d notes again", n)
	}
}

func TestBackoff(t *testing.T) {
	p := RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}.withDefaults()
	for attempt := 1; attempt <= 8; attempt++ {
		hi := min(100*time.Millisecond<<(attempt-1), time.Second)
		for range 50 {
			if d := p.backoff(attempt); d < hi/2 || d > hi {
				t.Fatalf("backoff(%d) = %s, want in [%s, %s]", attempt, d, hi/2, hi)
			}
		}
	}
	// A non-model error is returned at once.
	calls := 0
	_, err := p.Do(context.Background(), func(context.Context) (Response, error) { calls++; return Response{}, errors.New("x") })
	if err == nil || calls != 1 {
		t.Errorf("err %v calls %d", err, calls)
	}
}

func TestProjectInstructions(t *testing.T) {
	dir := t.TempDir()
	if s, err := ReadProjectInstructions(dir); s != "" || err != nil {
		t.Errorf("missing: %q %v", s, err)
	}
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte(strings.Repeat("x", MaxProjectInstructions+100)), 0o644)
	s, err := ReadProjectInstructions(dir)
	if err != nil || len(s) > MaxProjectInstructions+100 || !strings.HasSuffix(s, "[AGENTS.md truncated by agentbox]") {
		t.Errorf("capped: %d bytes %v", len(s), err)
	}
	// A symlink could show the model a host file: refused.
	dir2 := t.TempDir()
	secret := filepath.Join(t.TempDir(), "id_rsa")
	os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600)
	os.Symlink(secret, filepath.Join(dir2, "AGENTS.md"))
	if s, err := ReadProjectInstructions(dir2); err == nil || strings.Contains(s, "PRIVATE") {
		t.Errorf("symlink followed: %q %v", s, err)
	}
}

func TestMemory(t *testing.T) {
	state := t.TempDir()
	ws := t.TempDir()
	p, err := MemoryPath(state, ws)
	if err != nil || !strings.HasPrefix(p, filepath.Join(state, "agentbox", "memory")+"/") || !strings.HasSuffix(p, ".jsonl") {
		t.Fatalf("path %q %v", p, err)
	}
	if p2, _ := DefaultMemoryPath(func(k string) string { return map[string]string{"XDG_STATE_HOME": state}[k] }, ws); p2 != p {
		t.Errorf("default path %q != %q", p2, p)
	}
	m := Memory{Path: p}
	if e, err := m.Recent(10); len(e) != 0 || err != nil {
		t.Errorf("empty: %v %v", e, err)
	}
	for i := range 15 {
		if err := m.Append(MemoryEntry{Task: "task " + string(rune('a'+i)), Status: "ok", Answer: strings.Repeat("z", 5000)}); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("not json\n")
	f.Close()
	e, err := m.Recent(10)
	if err != nil || len(e) != 10 || e[0].Task != "task f" || e[9].Task != "task o" || len(e[0].Answer) > memoryFieldBytes+4 {
		t.Errorf("recent = %d entries, err %v", len(e), err)
	}
	if fi, _ := os.Stat(filepath.Dir(p)); fi.Mode().Perm() != 0o700 {
		t.Errorf("memory dir mode %v", fi.Mode())
	}
}

func TestPromptApprover(t *testing.T) {
	var out strings.Builder
	p := NewPrompt(strings.NewReader("maybe\ns\n"), &out)
	req := ApprovalRequest{Tool: "execute_bash", Subject: "git push\u202e origin", Decision: decisionAsk("commands.ask[0]", "git push")}
	ap, err := p.Approve(context.Background(), req)
	if err != nil || !ap.Allow || ap.DecidedBy != "user" {
		t.Fatalf("approval %+v %v", ap, err)
	}
	if !strings.Contains(out.String(), "git push<U+202E> origin") || !strings.Contains(out.String(), "please answer") || !strings.Contains(out.String(), "[s] yes for this session") ||
		!strings.Contains(out.String(), "this session: every call under rule commands.ask[0]") {
		t.Errorf("prompt:\n%s", out.String())
	}
	// "s" remembers the rule for this session.
	ap, _ = p.Approve(context.Background(), req)
	if !ap.Allow || ap.DecidedBy != "session-rule" {
		t.Errorf("second approval %+v", ap)
	}
	// The catch-all default cannot be remembered; end of input denies.
	out.Reset()
	p = NewPrompt(strings.NewReader("s\n"), &out)
	ap, _ = p.Approve(context.Background(), ApprovalRequest{Tool: "execute_bash", Subject: "make", Decision: decisionAsk("commands.default", "")})
	if ap.Allow || strings.Contains(out.String(), "[s] yes") || strings.Contains(out.String(), "[a]lways") {
		t.Errorf("default rule: %+v\n%s", ap, out.String())
	}
}

func TestParseScriptErrors(t *testing.T) {
	for _, y := range []string{
		"",
		"turns: []\n",
		"turns:\n  - tool_calls: [{args: {}}]\n",
		"turns:\n  - tool_calls: [{name: x, args: {}, arguments: '{}'}]\n",
		"turns:\n  - bogus: 1\n",
	} {
		if _, err := ParseScript("t", []byte(y)); err == nil {
			t.Errorf("ParseScript(%q) accepted", y)
		}
	}
}

func decisionAsk(rule, pattern string) policy.Decision {
	return policy.Decision{Verdict: policy.Ask, Rule: rule, Pattern: pattern, Reason: "matched " + rule}
}

// Ctrl-C at the approval prompt ends the wait at once, answered or not.
func TestPromptObservesCancel(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	p := NewPrompt(pr, io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Approve(ctx, ApprovalRequest{Tool: "execute_bash", Subject: "git push"})
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

// "yes for this session" for one command prefix does not approve a script
// whose other parts ask under other rules.
func TestPromptAlwaysCoversOnlyItsRules(t *testing.T) {
	pol := policy.Default()
	p := NewPrompt(strings.NewReader("s\n"), io.Discard)
	ask := func(cmd string) Approval {
		t.Helper()
		d := pol.Decide(policy.Action{Kind: policy.Command, Command: cmd})
		if d.Verdict != policy.Ask {
			t.Fatalf("%q: want ask, got %s", cmd, d.Verdict)
		}
		ap, err := p.Approve(context.Background(), ApprovalRequest{Tool: "execute_bash", Subject: cmd, Decision: d})
		if err != nil {
			t.Fatal(err)
		}
		return ap
	}
	if ap := ask("git push origin x"); !ap.Allow {
		t.Fatalf("answered s: %+v", ap)
	}
	if ap := ask("git push origin y"); !ap.Allow || ap.DecidedBy != "session-rule" {
		t.Errorf("same rule again: %+v", ap)
	}
	// The input is exhausted: a prompt now means end of input, a denial.
	if ap := ask("git push origin z; npm install left-pad"); ap.Allow {
		t.Errorf("a remembered rule approved another rule's command: %+v", ap)
	}
}
