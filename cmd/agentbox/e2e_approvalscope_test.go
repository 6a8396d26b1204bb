package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
)

// scopeRun is one scripted run on a real terminal (tmux) whose model asks
// twice for commands under the same rule (`touch a.txt`, then `touch
// b.txt`, both under commands.ask "touch", so the prefix `touch` covers
// both).
type scopeRun struct {
	dir, ws, pol, script string
	env                  []string
}

func newScopeRun(t *testing.T) *scopeRun {
	t.Helper()
	dir := t.TempDir()
	s := &scopeRun{dir: dir, ws: filepath.Join(dir, "ws"), pol: filepath.Join(dir, "policy.yaml"), script: filepath.Join(dir, "s.yaml"), env: baseEnv(t)}
	if err := os.Mkdir(s.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, s.pol, "version: 1\nextends: none\ncommands:\n  default: deny\n  allow: [echo]\n  ask: [touch]\n", 0o644)
	writeFile(t, s.script, "turns:\n"+
		"  - tool_calls:\n      - {name: execute_bash, args: {command: \"touch a.txt\"}}\n"+
		"  - tool_calls:\n      - {name: execute_bash, args: {command: \"touch b.txt\"}}\n"+
		"  - content: finished\n", 0o644)
	return s
}

// start runs the script on a terminal, auditing to log.
func (s *scopeRun) start(t *testing.T, log string) *tmuxPane {
	return newTmuxPane(t, 200, s.dir, s.env, "run", "--no-memory", "--workspace", s.ws, "--policy", s.pol,
		"--audit", log, "--script", s.script, "touch two files")
}

// approvals are the answers in the log (approval records, without those
// of programs at exec time inheriting their call's approval).
func approvals(t *testing.T, log string) []audit.Record {
	t.Helper()
	var out []audit.Record
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event == audit.EventApproval && l.rec.DecidedBy != "call-approval" {
			out = append(out, l.rec)
		}
	}
	return out
}

func (s *scopeRun) made(name string) bool {
	_, err := os.Stat(filepath.Join(s.ws, name))
	return err == nil
}

// TestApprovalScopes drives each scope on a real terminal: "once" asks
// again for the second call; "this session" answers the second call
// without asking and is gone in the next run; "deny for this session"
// denies the second call without asking. The prompt shows the rule kept
// and where "always" saves it before any key is pressed; every answer is
// an approval record with its scope.
func TestApprovalScopes(t *testing.T) {
	testutil.RequireDocker(t)
	s := newScopeRun(t)
	const question = "Allow? [y]es once"

	t.Run("once", func(t *testing.T) {
		log := filepath.Join(s.dir, "once.jsonl")
		p := s.start(t, log)
		pane := p.wait(question)
		for _, want := range []string{"[s]/[d] this session: command prefix `touch`", "[a] saves: command prefix `touch` in ", "approvals.json for workspace " + s.ws} {
			if !strings.Contains(pane, want) {
				t.Errorf("the prompt does not show %q:\n%s", want, pane)
			}
		}
		p.tmux("send-keys", "y")
		testutil.Eventually(t, 2*time.Minute, "the second question", func() bool {
			return strings.Count(p.tmux("capture-pane", "-p", "-J", "-S", "-200"), question) == 2
		})
		p.tmux("send-keys", "n")
		if pane := p.wait("EXIT="); !strings.Contains(pane, "EXIT=0") {
			t.Fatalf("run:\n%s", pane)
		}
		ap := approvals(t, log)
		if len(ap) != 2 || ap[0].Scope != audit.ScopeOnce || ap[0].Decision != "allow" || ap[1].Scope != audit.ScopeOnce || ap[1].Decision != "deny" {
			t.Errorf("approval records: %+v", ap)
		}
		if !s.made("a.txt") || s.made("b.txt") {
			t.Errorf("yes once made a.txt only: a %v b %v", s.made("a.txt"), s.made("b.txt"))
		}
	})

	t.Run("session", func(t *testing.T) {
		for _, f := range []string{"a.txt", "b.txt"} {
			_ = os.Remove(filepath.Join(s.ws, f))
		}
		log := filepath.Join(s.dir, "session.jsonl")
		p := s.start(t, log)
		p.wait(question)
		p.tmux("send-keys", "s")
		pane := p.wait("EXIT=")
		if !strings.Contains(pane, "EXIT=0") || strings.Count(p.tmux("capture-pane", "-p", "-J", "-S", "-200"), question) != 1 {
			t.Fatalf("the second call must run without a question:\n%s", pane)
		}
		ap := approvals(t, log)
		if len(ap) != 2 || ap[0].Scope != audit.ScopeSession || ap[0].DecidedBy != audit.DecidedByUser ||
			ap[1].Scope != audit.ScopeSession || ap[1].DecidedBy != audit.DecidedBySessionRule || ap[1].Decision != "allow" {
			t.Errorf("approval records: %+v", ap)
		}
		if !s.made("a.txt") || !s.made("b.txt") {
			t.Errorf("both calls ran: a %v b %v", s.made("a.txt"), s.made("b.txt"))
		}
		// Not saved: the next run asks again (answered n), and nothing is listed.
		p = s.start(t, filepath.Join(s.dir, "session2.jsonl"))
		p.wait(question)
		p.tmux("send-keys", "n")
		testutil.Eventually(t, 2*time.Minute, "the second question of the next run", func() bool {
			return strings.Count(p.tmux("capture-pane", "-p", "-J", "-S", "-200"), question) == 2
		})
		p.tmux("send-keys", "n")
		p.wait("EXIT=")
		r := abCmd{dir: s.dir, fullEnv: s.env}.run(t, "approvals", "list", "--workspace", s.ws)
		if r.code != 0 || strings.Contains(r.stdout, "touch") {
			t.Errorf("a session answer was saved: %d %q", r.code, r.stdout)
		}
	})

	t.Run("deny-session", func(t *testing.T) {
		for _, f := range []string{"a.txt", "b.txt"} {
			_ = os.Remove(filepath.Join(s.ws, f))
		}
		log := filepath.Join(s.dir, "deny.jsonl")
		p := s.start(t, log)
		p.wait(question)
		p.tmux("send-keys", "d")
		pane := p.wait("EXIT=")
		if strings.Count(p.tmux("capture-pane", "-p", "-J", "-S", "-200"), question) != 1 {
			t.Fatalf("the second identical ask was asked:\n%s", pane)
		}
		ap := approvals(t, log)
		if len(ap) != 2 || ap[0].Scope != audit.ScopeSession || ap[0].Decision != "deny" || ap[0].DecidedBy != audit.DecidedByUser ||
			ap[1].Scope != audit.ScopeSession || ap[1].Decision != "deny" || ap[1].DecidedBy != audit.DecidedBySessionRule {
			t.Errorf("approval records: %+v", ap)
		}
		if s.made("a.txt") || s.made("b.txt") {
			t.Errorf("a denied call ran: a %v b %v", s.made("a.txt"), s.made("b.txt"))
		}
	})

	// Without a terminal nothing is asked and nothing new is allowed.
	t.Run("no-terminal", func(t *testing.T) {
		log := filepath.Join(s.dir, "ci.jsonl")
		r := abCmd{dir: s.dir, fullEnv: s.env}.run(t, "run", "--no-memory", "--workspace", s.ws, "--policy", s.pol,
			"--audit", log, "--script", s.script, "touch two files")
		ap := approvals(t, log)
		if len(ap) != 2 || ap[0].Decision != "deny" || ap[0].DecidedBy != audit.DecidedByNoTerminal || ap[0].Scope != audit.ScopeOnce {
			t.Errorf("no terminal: %d %+v", r.code, ap)
		}
		if s.made("a.txt") || s.made("b.txt") {
			t.Error("a call ran without a terminal to ask")
		}
	})
}
