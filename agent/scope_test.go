package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
)

// Each scope: what it answers now, what it keeps, and what the prompt
// showed before the key was pressed.
func TestPromptScopes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		key          string
		allow        bool
		scope        string
		saved        int  // prefixes in the store after
		secondAsks   bool // the identical second ask reaches the (exhausted) input
		secondAllows bool
	}{
		{"y", true, audit.ScopeOnce, 0, true, false},
		{"n", false, audit.ScopeOnce, 0, true, false},
		{"s", true, audit.ScopeSession, 0, false, true},
		{"a", true, audit.ScopeWorkspace, 1, false, true},
		{"d", false, audit.ScopeSession, 0, false, false},
	} {
		t.Run(tc.key, func(t *testing.T) {
			st := &memStore{}
			var out strings.Builder
			p := NewPrompt(strings.NewReader(tc.key+"\n"), &out)
			p.Store = st
			ap, err := p.Approve(ctx, askCmd(t, "frob-tool x"))
			if err != nil || ap.Allow != tc.allow || ap.Scope != tc.scope || ap.DecidedBy != audit.DecidedByUser {
				t.Fatalf("answer %q: %+v %v", tc.key, ap, err)
			}
			for _, want := range []string{"[s]/[d] this session: command prefix `frob-tool x`", "[a] saves: command prefix `frob-tool x` in memory", "[d]eny for this session"} {
				if !strings.Contains(ap.Prompt, want) {
					t.Errorf("the prompt does not show %q:\n%s", want, ap.Prompt)
				}
			}
			if len(st.p) != tc.saved {
				t.Errorf("saved %v", st.p)
			}
			out.Reset()
			second, err := p.Approve(ctx, askCmd(t, "frob-tool x --more"))
			if err != nil || second.Allow != tc.secondAllows {
				t.Fatalf("second ask: %+v %v", second, err)
			}
			if asked := out.Len() > 0; asked != tc.secondAsks {
				t.Errorf("second ask prompted: %v, want %v:\n%s", asked, tc.secondAsks, out.String())
			}
			if !tc.secondAsks && (second.DecidedBy != audit.DecidedBySessionRule || second.Scope == audit.ScopeOnce) {
				t.Errorf("second answer without asking: %+v", second)
			}
			// Another command is not covered by any scope.
			out.Reset()
			if other, _ := p.Approve(ctx, askCmd(t, "other-tool x")); other.Allow || out.Len() == 0 {
				t.Errorf("another command was not asked about: %+v", other)
			}
		})
	}
}

// "deny for this session" wins over an allowance: a script with a denied
// command and an allowed one is denied without asking, and over the
// workspace's saved prefixes.
func TestDenyForSessionWins(t *testing.T) {
	ctx := context.Background()
	st := &memStore{p: []string{"frob-tool y"}}
	var out strings.Builder
	p := NewPrompt(strings.NewReader("s\nd\n"), &out)
	p.Store = st
	if ap, _ := p.Approve(ctx, askCmd(t, "frob-tool x")); !ap.Allow || ap.Scope != audit.ScopeSession {
		t.Fatalf("s: %+v", ap)
	}
	if ap, _ := p.Approve(ctx, askCmd(t, "other-tool z")); ap.Allow || ap.Scope != audit.ScopeSession {
		t.Fatalf("d: %+v", ap)
	}
	out.Reset()
	ap, _ := p.Approve(ctx, askCmd(t, "frob-tool x; other-tool z; frob-tool y"))
	if ap.Allow || ap.DecidedBy != audit.DecidedBySessionRule || out.Len() != 0 || !strings.Contains(ap.Note, "`other-tool z`") {
		t.Errorf("a script with a command denied for the session: %+v\n%s", ap, out.String())
	}
	if ap, _ := p.Approve(ctx, askCmd(t, "frob-tool y")); !ap.Allow || ap.Scope != audit.ScopeWorkspace || ap.Approver != "remembered" {
		t.Errorf("saved prefix: %+v", ap)
	}
}

// A file ask under a catch-all rule: no session allowance (nothing broader
// than the call could be named), but "deny for this session" of exactly
// that call.
func TestDenyExactCall(t *testing.T) {
	ctx := context.Background()
	var out strings.Builder
	p := NewPrompt(strings.NewReader("d\n"), &out)
	req := ApprovalRequest{Tool: ToolReadFile, Subject: "notes.txt", Decision: decisionAsk("files.read.default", "")}
	ap, _ := p.Approve(ctx, req)
	if ap.Allow || ap.Scope != audit.ScopeSession || strings.Contains(ap.Prompt, "[s] yes") || !strings.Contains(ap.Prompt, "exactly this call (read_file notes.txt)") {
		t.Fatalf("%+v", ap)
	}
	if again, _ := p.Approve(ctx, req); again.Allow || again.DecidedBy != audit.DecidedBySessionRule {
		t.Errorf("the identical ask: %+v", again)
	}
	out.Reset()
	other := req
	other.Subject = "other.txt"
	if ap, _ := p.Approve(ctx, other); ap.DecidedBy != audit.DecidedByUser || out.Len() == 0 {
		t.Errorf("another file was not asked about: %+v", ap)
	}
}
