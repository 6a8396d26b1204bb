package session_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/session"
)

// countingRuntime counts how often its sessions are closed.
type countingRuntime struct {
	*sandboxtest.FakeRuntime
	closes atomic.Int32
}

func (r *countingRuntime) Start(ctx context.Context, cfg sandbox.Config) (sandbox.Session, error) {
	s, err := r.FakeRuntime.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &countingSession{Session: s, n: &r.closes}, nil
}

type countingSession struct {
	sandbox.Session
	n *atomic.Int32
}

func (s *countingSession) Close(ctx context.Context) error {
	s.n.Add(1)
	return s.Session.Close(ctx)
}

// TestSandboxClosedOnce: whatever the workspace's shape (in place, a real
// copy, a copy pulled over the channel), and whether the session ran or
// not, Close closes the sandbox exactly once, a second Close does
// nothing, and a closed session starts no sandbox again.
func TestSandboxClosedOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		caps   sandbox.Capabilities
		mode   sandbox.WorkspaceMode
		record bool
	}{
		{"in place", sandbox.Capabilities{Backend: "fake", Workspace: sandbox.WorkspaceMount}, sandbox.WorkspaceRW, true},
		{"real copy", sandbox.Capabilities{Backend: "fake", Workspace: sandbox.WorkspaceMount}, sandbox.WorkspaceCopy, true},
		{"pulled copy", sandbox.Capabilities{Backend: "remote", Workspace: sandbox.WorkspaceChannel}, "", true},
		{"never recorded", sandbox.Capabilities{Backend: "remote", Workspace: sandbox.WorkspaceChannel}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rt := &countingRuntime{FakeRuntime: &sandboxtest.FakeRuntime{Caps: tc.caps}}
			ctx := context.Background()
			s, err := session.Open(ctx, rt, f.options(tc.mode))
			if err != nil {
				t.Fatal(err)
			}
			if tc.record {
				if _, err := s.Start(ctx); err != nil {
					t.Fatal(err)
				}
				if o := s.Tools().Call(ctx, "c1", agent.ToolWriteFile, `{"path": "new.txt", "content": "new\n"}`); o.Err != nil {
					t.Fatalf("write: %+v", o)
				}
			} else if _, err := s.StartSandbox(ctx); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := s.Close(ctx, session.End{Status: agent.StatusOK, Steps: 1}); err != nil {
					t.Fatal(err)
				}
			}
			if n := rt.closes.Load(); n != 1 {
				t.Errorf("the sandbox was closed %d times, want once", n)
			}
			if _, err := s.StartSandbox(ctx); err == nil {
				t.Error("a closed session started a sandbox again")
			}
			if !tc.record {
				if ents, _ := os.ReadDir(f.store.Dir); len(ents) > 0 {
					t.Errorf("a session that never ran left %d entries in the store", len(ents))
				}
			}
		})
	}
}
