package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/workspace"
	"github.com/agentbox/agentbox/workspace/workspacetest"
)

// TestWorkspaceLifecycleOrder: the session drives its workspace through
// the lifecycle in the order workspace.Workspace gives (the fake refuses
// any other), once each, Close last; and a session that never ran only
// closes it.
func TestWorkspaceLifecycleOrder(t *testing.T) {
	for _, ran := range []bool{true, false} {
		var fake *workspacetest.Fake
		s, _ := onFake(t, func(ws string) workspace.Workspace { fake = workspacetest.NewFake(ws); return fake })
		ctx := context.Background()
		if ran {
			if _, err := s.Start(ctx); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"c1", "c2"} {
				if o := s.Tools().Call(ctx, id, agent.ToolWriteFile, `{"path": "`+id+`.txt", "content": "x"}`); o.Err != nil {
					t.Fatalf("write: %+v", o)
				}
			}
		}
		closed, err := s.Close(ctx, End{Status: agent.StatusOK, Steps: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Close(ctx, End{Status: agent.StatusOK}); err != nil {
			t.Fatal(err)
		}
		want := "Close"
		if ran {
			want = "Begin, Ready, AfterCall c1, AfterCall c2, Finish, Close"
			if len(closed.Files) != 2 {
				t.Errorf("change list %+v: want c1.txt and c2.txt", closed.Files)
			}
		}
		if got := strings.Join(fake.Steps, ", "); got != want || len(fake.Misuse) > 0 {
			t.Errorf("ran %v: steps %q (misuse %v), want %q", ran, got, fake.Misuse, want)
		}
	}
}

// onFake opens a lazy session under the default policy on a fake
// runtime, working on the workspace newWS makes on a new directory
// (instead of the in-place one Open made), with its audit log at
// logPath.
func onFake(t *testing.T, newWS func(ws string) workspace.Workspace) (s *Session, logPath string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath = filepath.Join(dir, "audit.jsonl")
	log, err := audit.Open(logPath, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Close() })
	p := policy.Default()
	s, err = Open(context.Background(), &sandboxtest.FakeRuntime{}, Options{Policy: p, Sandbox: agent.SandboxConfig(p, ws), Audit: log, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.ws.Close() // the in-place workspace Open made; nothing began
	s.setWorkspace(newWS(ws))
	return s, logPath
}
