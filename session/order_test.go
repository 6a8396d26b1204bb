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
	"github.com/agentbox/agentbox/workspace/workspacetest"
)

// TestWorkspaceLifecycleOrder: the session drives its workspace through
// the lifecycle in the order workspace.Workspace gives (the fake refuses
// any other), once each, Close last; and a session that never ran only
// closes it.
func TestWorkspaceLifecycleOrder(t *testing.T) {
	for _, ran := range []bool{true, false} {
		dir := t.TempDir()
		ws := filepath.Join(dir, "ws")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		log, err := audit.Open(filepath.Join(dir, "audit.jsonl"), audit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = log.Close() })
		p := policy.Default()
		ctx := context.Background()
		s, err := Open(ctx, &sandboxtest.FakeRuntime{}, Options{Policy: p, Sandbox: agent.SandboxConfig(p, ws), Audit: log, Lazy: true})
		if err != nil {
			t.Fatal(err)
		}
		_ = s.ws.Close() // the in-place workspace Open made; nothing began
		fake := workspacetest.NewFake(ws)
		s.setWorkspace(fake)
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
