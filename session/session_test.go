package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
	"github.com/agentbox/agentbox/session"
	"github.com/agentbox/agentbox/workspace"
)

type fixture struct {
	ws, auditPath string
	log           *audit.Writer
	p             *policy.Policy
	store         workspace.Store
	notices       []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{ws: filepath.Join(dir, "ws"), auditPath: filepath.Join(dir, "audit.jsonl"), p: policy.Default(),
		store: workspace.Store{Dir: filepath.Join(dir, "work")}}
	if err := os.MkdirAll(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.log, err = audit.Open(f.auditPath, audit.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.log.Close() })
	return f
}

func (f *fixture) options(mode sandbox.WorkspaceMode) session.Options {
	return session.Options{Policy: f.p, Sandbox: agent.SandboxConfig(f.p, f.ws), Mode: mode, Audit: f.log,
		Store: f.store, NoOverlay: true, Lazy: true, Record: session.Record{Task: "t", Version: "test"},
		Notice: func(s string) { f.notices = append(f.notices, s) }}
}

func (f *fixture) records(t *testing.T) []audit.Record {
	t.Helper()
	fh, err := os.Open(f.auditPath)
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

func events(recs []audit.Record) string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Event)
	}
	return strings.Join(out, ",")
}

// TestModeByCapabilities: a backend without host mounts works on a copy
// where the policy says rw, refuses rw asked for by name, and the copy's
// changes wait for review: the workspace is untouched.
func TestModeByCapabilities(t *testing.T) {
	f := newFixture(t)
	rt := &sandboxtest.FakeRuntime{Caps: sandbox.Capabilities{Backend: "remote", Workspace: sandbox.WorkspaceChannel}}
	o := f.options("")
	o.ModeExplicit = false
	ctx := context.Background()
	s, err := session.Open(ctx, rt, o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode() != sandbox.WorkspaceCopy || s.Copy() == nil || s.Copy().Kind == workspace.KindOverlay {
		t.Fatalf("mode %s copy %+v: want a real copy", s.Mode(), s.Copy())
	}
	if _, err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rt.Started[0]; got.Workspace == f.ws || !got.WorkspaceCopy || got.WorkspaceMode != sandbox.WorkspaceRW {
		t.Errorf("started on %s (copy %v, mode %s): want the copy, rw", got.Workspace, got.WorkspaceCopy, got.WorkspaceMode)
	}
	o1 := s.Tools().Call(ctx, "c1", agent.ToolWriteFile, `{"path": "b.txt", "content": "b"}`)
	if o1.Decision != "allow" || o1.Err != nil {
		t.Fatalf("write: %+v", o1)
	}
	closed, err := s.Close(ctx, session.End{Status: agent.StatusOK, Steps: 1})
	if err != nil || closed.ExitCode != 0 || len(closed.Files) != 1 || closed.Files[0].Path != "b.txt" {
		t.Fatalf("close: %+v %v", closed, err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("the workspace was changed: %v", err)
	}
	if joined := strings.Join(f.notices, "\n"); !strings.Contains(joined, "remote backend does not mount") || !strings.Contains(joined, "wait in session") {
		t.Errorf("notices: %q", f.notices)
	}
	if got := events(f.records(t)); got != "session_start,tool_call,tool_call,session_end" {
		t.Errorf("records: %s", got)
	}

	o.Mode, o.ModeExplicit = sandbox.WorkspaceRW, true
	if _, err := session.Open(ctx, rt, o); !errors.Is(err, sandbox.ErrConfig) || !strings.Contains(err.Error(), "remote backend") {
		t.Errorf("explicit rw without host mounts: %v", err)
	}
}

// TestCopyPolicyEverywhere: a policy's workspace: copy is a copy for every
// front-end, exec included (it used to be refused there).
func TestCopyPolicyEverywhere(t *testing.T) {
	f := newFixture(t)
	path := filepath.Join(t.TempDir(), "agentbox.yaml")
	if err := os.WriteFile(path, []byte("version: 1\nextends: none\nsandbox: {workspace: copy}\ncommands: {allow: [\"true\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	o := f.options("")
	o.Policy, o.Sandbox = p, agent.SandboxConfig(p, f.ws)
	s, err := session.Open(context.Background(), &sandboxtest.FakeRuntime{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode() != sandbox.WorkspaceCopy || s.Copy() == nil {
		t.Fatalf("mode %s: want copy", s.Mode())
	}
	out, _, err := session.Exec(context.Background(), s, "true")
	if err != nil || out.Denied {
		t.Fatalf("exec: %+v %v", out, err)
	}
}

// TestExecDeniedStartsNothing: a command the policy denies starts no
// sandbox, yet session_start, the call and session_end are recorded.
func TestExecDeniedStartsNothing(t *testing.T) {
	f := newFixture(t)
	rt := &sandboxtest.FakeRuntime{}
	s, err := session.Open(context.Background(), rt, f.options(""))
	if err != nil {
		t.Fatal(err)
	}
	o, closed, err := session.Exec(context.Background(), s, "sudo rm -rf /")
	if err != nil || !o.Denied || len(rt.Started) != 0 {
		t.Fatalf("outcome %+v err %v started %d", o, err, len(rt.Started))
	}
	if closed.ExitCode != session.ExitDenied {
		t.Errorf("exit code %d, want %d", closed.ExitCode, session.ExitDenied)
	}
	recs := f.records(t)
	if got := events(recs); got != "session_start,tool_call,session_end" {
		t.Fatalf("records: %s", got)
	}
	if recs[0].ContainerID != "" || recs[2].Status != agent.StatusDenied {
		t.Errorf("session_start %+v session_end %+v", recs[0], recs[2])
	}
}

// TestAfterCallHook: the pipeline calls the session's per-call step after
// every call that did not end the session (a denied one too: a kept
// background process may have changed files), and its error ends the
// session.
func TestAfterCallHook(t *testing.T) {
	f := newFixture(t)
	s, err := session.Open(context.Background(), &sandboxtest.FakeRuntime{}, f.options(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var seen []string
	boom := errors.New("promotion failed")
	s.Tools().Hook = hookFunc(func(ctx context.Context, o *agent.Outcome) error {
		seen = append(seen, o.CallID)
		if o.CallID == "c2" {
			return boom
		}
		return s.AfterCall(ctx, o)
	})
	ctx := context.Background()
	if o := s.Tools().Call(ctx, "c1", agent.ToolExecuteBash, `{"command": "ls"}`); o.Err != nil {
		t.Fatalf("c1: %v", o.Err)
	}
	s.Tools().Call(ctx, "c0", agent.ToolExecuteBash, `{"command": "sudo ls"}`) // denied: did not run
	if o := s.Tools().Call(ctx, "c2", agent.ToolReadFile, `{"path": "a.txt"}`); !errors.Is(o.Err, boom) {
		t.Fatalf("c2: %v", o.Err)
	}
	if strings.Join(seen, ",") != "c1,c0,c2" {
		t.Errorf("after-call ran for %v, want c1,c0,c2", seen)
	}
	closed, _ := s.Close(ctx, session.End{Status: agent.StatusError, Err: boom})
	if closed.ExitCode != session.ExitFailed {
		t.Errorf("exit %d", closed.ExitCode)
	}
}

// hookFunc is a per-call hook made of a function.
type hookFunc func(ctx context.Context, o *agent.Outcome) error

func (f hookFunc) AfterCall(ctx context.Context, o *agent.Outcome) error { return f(ctx, o) }

// TestCloseWithoutStartRecordsNothing: a session whose sandbox never
// started writes nothing and leaves no copy.
func TestCloseWithoutStartRecordsNothing(t *testing.T) {
	f := newFixture(t)
	s, err := session.Open(context.Background(), &sandboxtest.FakeRuntime{}, f.options(sandbox.WorkspaceCopy))
	if err != nil {
		t.Fatal(err)
	}
	root := s.Copy().Root
	if _, err := s.Close(context.Background(), session.End{Status: agent.StatusInterrupted}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("copy %s left behind: %v", root, err)
	}
	if fi, err := os.Stat(f.auditPath); err == nil && fi.Size() > 0 {
		t.Errorf("audit log has %d bytes", fi.Size())
	}
}
