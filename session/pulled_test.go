package session_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/session"
	"github.com/agentbox/agentbox/workspace"
)

// TestPulledChangesDecided: on a backend whose sandbox holds its own copy
// (Kubernetes; the fake writes straight into the host-side copy, as the
// pull does), the changes that come back go through the decisions of
// promotion at Close: a git directory under an ordinary name is held
// (alarms, kept for review, gone from the change list), the rest waits
// for apply, and apply leaves no repository in src/.
func TestPulledChangesDecided(t *testing.T) {
	f := newFixture(t)
	rt := &sandboxtest.FakeRuntime{Caps: sandbox.Capabilities{Backend: "remote", Workspace: sandbox.WorkspaceChannel}}
	ctx := context.Background()
	s, err := session.Open(ctx, rt, f.options(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i, w := range [][2]string{{"src/HEAD", "ref: refs/heads/main\n"}, {"src/config", "[core]\n\tfsmonitor = touch /tmp/x\n"},
		{"src/objects/o", "x"}, {"src/refs/heads/main", "0"}, {"ok.txt", "fine\n"}} {
		o := s.Tools().Call(ctx, "c"+string(rune('0'+i)), agent.ToolWriteFile, `{"path": "`+w[0]+`", "content": "`+strings.ReplaceAll(strings.ReplaceAll(w[1], "\n", `\n`), "\t", `\t`)+`"}`)
		if o.Decision != "allow" || o.Err != nil {
			t.Fatalf("write %s: %+v", w[0], o)
		}
	}
	cp := s.Copy()
	closed, err := s.Close(ctx, session.End{Status: agent.StatusOK, Steps: 1})
	if err != nil || closed.ExitCode != 0 {
		t.Fatalf("close: %+v %v", closed, err)
	}
	if len(closed.Files) != 1 || closed.Files[0].Path != "ok.txt" {
		t.Errorf("change list %+v: want ok.txt alone", closed.Files)
	}
	if joined := strings.Join(f.notices, "\n"); !strings.Contains(joined, "agentbox held 4 change(s)") || !strings.Contains(joined, "--held") {
		t.Errorf("notices: %q", f.notices)
	}
	alarms := 0
	for _, r := range f.records(t) {
		if r.Event == audit.EventAlarm && r.Action == "held" && r.Rule == workspace.HazardGitRepo && strings.HasPrefix(r.Path, "src/") {
			alarms++
		}
	}
	if alarms != 4 {
		t.Errorf("%d held alarms for src/, want 4", alarms)
	}
	cps, err := workspace.LoadCheckpoints(cp.StageDir())
	if err != nil || len(cps) != 1 || len(cps[0].HeldChanges()) != 4 {
		t.Fatalf("held on record: %v %+v", err, cps)
	}
	loaded, err := f.store.Load(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := loaded.Apply(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "ok.txt")); err != nil {
		t.Error("the allowed change was not applied")
	}
	for _, p := range []string{"src/HEAD", "src/config", "src/objects", "src/refs"} {
		if _, err := os.Lstat(filepath.Join(f.ws, p)); err == nil {
			t.Errorf("held %s reached the workspace", p)
		}
	}
}
