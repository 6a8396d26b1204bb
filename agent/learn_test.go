package agent_test

import (
	"context"
	"os"
	"testing"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
)

// TestLearnRecordsWouldDecisions: in a learning run, a call the policy asks
// about and one it denies both run, each recorded as would_ask/would_deny
// with its rule; a call the policy allows is recorded as before. Replay
// reads the policy's verdict behind them, and LogProbes hands them to
// suggest as things the run did.
func TestLearnRecordsWouldDecisions(t *testing.T) {
	tools, fs, path := newTools(t)
	tools.Learn = true
	ctx := context.Background()
	for _, cmd := range []string{"git push origin main", "curl https://example.com", "ls"} {
		if o := tools.Exec(ctx, cmd); o.Err != nil || o.Denied || !o.Ran {
			t.Fatalf("%s in a learning run: %+v", cmd, o)
		}
	}
	if got := fs.commands(); len(got) != 3 {
		t.Fatalf("the sandbox ran %q, want all three", got)
	}
	want := []struct{ decision, rule string }{
		{audit.DecisionWouldAsk, "commands.ask[0]"}, {audit.DecisionWouldDeny, "commands.deny[1]"}, {"allow", "commands.allow[0]"},
	}
	var dec []audit.Record
	for _, r := range events(readAudit(t, path), audit.EventToolCall) {
		if r.Phase == audit.PhaseDecision {
			dec = append(dec, r)
		}
	}
	if len(dec) != 3 {
		t.Fatalf("%d decision records, want 3", len(dec))
	}
	for i, w := range want {
		if dec[i].Decision != w.decision || dec[i].Rule != w.rule {
			t.Errorf("call %d: decision %q rule %q, want %q %q", i, dec[i].Decision, dec[i].Rule, w.decision, w.rule)
		}
		if w.decision != "allow" && dec[i].DecidedBy != audit.DecidedByLearn {
			t.Errorf("call %d decided by %q, want learn", i, dec[i].DecidedBy)
		}
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ch, err := audit.Replay(f, agent.ReplayDecider{Policy: testPolicyT(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != 0 {
		t.Errorf("replay under the learning run's own policy: %+v, want no change", ch)
	}
	allowAll, err := policy.Parse("all.yaml", []byte("version: 1\nextends: none\ncommands: {default: allow}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	ch, err = audit.Replay(f, agent.ReplayDecider{Policy: allowAll})
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != 2 || ch[0].Old != "ask" || ch[1].Old != "deny" || ch[0].New != "allow" || ch[0].Outcome != "allow (learn)" {
		t.Errorf("replay under allow-all: %+v, want ask and deny becoming allow", ch)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	probes, err := agent.LogProbes(f, "learn.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) != 3 {
		t.Errorf("LogProbes: %d probes, want the three calls", len(probes))
	}
}

// TestNotLearningStillAsks: without Learn the same calls are refused (the
// default stays enforcing).
func TestNotLearningStillAsks(t *testing.T) {
	tools, fs, _ := newTools(t)
	for _, cmd := range []string{"git push origin main", "curl https://example.com"} {
		if o := tools.Exec(context.Background(), cmd); !o.Denied || o.Ran {
			t.Errorf("%s outside a learning run ran: %+v", cmd, o)
		}
	}
	if got := fs.commands(); len(got) != 0 {
		t.Errorf("the sandbox ran %q", got)
	}
}
