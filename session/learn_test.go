package session_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/session"
)

// TestLearnSession: a learning run works on a copy (a mode named
// otherwise is refused), runs what the policy would ask about up front,
// records it would_ask, and session_start says learn: true.
func TestLearnSession(t *testing.T) {
	f := newFixture(t)
	o := f.options(sandbox.WorkspaceRW)
	o.ModeExplicit, o.Learn = true, true
	if _, err := session.Open(context.Background(), &sandboxtest.FakeRuntime{}, o); !errors.Is(err, sandbox.ErrConfig) {
		t.Fatalf("learn with --workspace-mode rw: %v, want a configuration error", err)
	}
	o = f.options("")
	o.Learn = true
	rt := &sandboxtest.FakeRuntime{}
	s, err := session.Open(context.Background(), rt, o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode() != sandbox.WorkspaceCopy || !s.Learn() {
		t.Fatalf("mode %s learn %v, want a learning run on a copy", s.Mode(), s.Learn())
	}
	out, _, err := session.Exec(context.Background(), s, "git push origin main")
	if err != nil || out.Denied || len(rt.Started) != 1 {
		t.Fatalf("outcome %+v err %v started %d", out, err, len(rt.Started))
	}
	recs := f.records(t)
	if recs[0].Event != audit.EventSessionStart || recs[0].Learn == nil || !*recs[0].Learn {
		t.Errorf("session_start %+v does not say learn", recs[0])
	}
	found := false
	for _, r := range recs {
		found = found || r.Decision == audit.DecisionWouldAsk && r.DecidedBy == audit.DecidedByLearn
	}
	if !found {
		t.Errorf("no would_ask record: %s", events(recs))
	}
}
