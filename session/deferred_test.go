package session

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/workspace"
	"github.com/agentbox/agentbox/workspace/workspacetest"
)

// TestDeferredPromotion: a bulk call's promotion, finishing while the
// model thinks, is waited for before the next call is decided or
// recorded and before Finish: its `changes` record and alarms come
// before the next call's records, what it held beyond the decisions goes
// to the model with the next call's result, and the last call's is
// waited for by Close.
func TestDeferredPromotion(t *testing.T) {
	var fake *workspacetest.FakeDeferring
	s, logPath := onFake(t, func(ws string) workspace.Workspace {
		fake = &workspacetest.FakeDeferring{Fake: workspacetest.NewFake(ws), Release: make(chan struct{}), LateHeld: "late.txt"}
		return fake
	})
	ctx := context.Background()
	if _, err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	write := func(id string) agent.Outcome {
		return s.Tools().Call(ctx, id, agent.ToolWriteFile, `{"path": "`+id+`.txt", "content": "x"}`)
	}
	o1 := write("c1")
	if o1.Err != nil || strings.Contains(o1.Text, "late.txt") {
		t.Fatalf("c1: %+v", o1)
	}
	// c1's promotion is still going on: nothing of it is recorded yet.
	for _, r := range readLog(t, logPath) {
		if r.Event == audit.EventChanges {
			t.Fatalf("a changes record before the deferred promotion finished: %+v", r)
		}
	}
	close(fake.Release)
	o2 := write("c2")
	if o2.Err != nil || !strings.Contains(o2.Text, "late.txt") || !strings.Contains(o2.Text, "call c1") {
		t.Fatalf("c2's result does not tell what c1's promotion held: %q (%v)", o2.Text, o2.Err)
	}
	if _, err := s.Close(ctx, End{Status: agent.StatusOK, Steps: 2}); err != nil {
		t.Fatal(err)
	}
	want := "Begin, Ready, AfterCallDeferred c1, Wait c1, AfterCallDeferred c2, Wait c2, Finish, Close"
	if got := strings.Join(fake.Steps, ", "); got != want || len(fake.Misuse) > 0 {
		t.Errorf("steps %q (misuse %v), want %q", got, fake.Misuse, want)
	}
	// The log: c1's changes and its alarm before anything of c2; c2's
	// before session_end.
	var order []string
	for _, r := range readLog(t, logPath) {
		switch {
		case r.Event == audit.EventChanges, r.Event == audit.EventAlarm && r.Action == "held":
			order = append(order, r.Event+" "+r.CallID)
		case r.Event == audit.EventToolCall && r.Phase == audit.PhaseDecision, r.Event == audit.EventSessionEnd:
			order = append(order, r.Event+" "+r.CallID)
		}
	}
	wantLog := "tool_call c1, changes c1, alarm c1, tool_call c2, changes c2, alarm c2, session_end "
	if got := strings.Join(order, ", "); got != wantLog {
		t.Errorf("records %q, want %q", got, wantLog)
	}
}

func readLog(t *testing.T, path string) []audit.Record {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	recs, err := audit.ReadAll(fh)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
