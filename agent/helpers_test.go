package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/session"
)

// testKey is the fake model API key; it must appear nowhere.
const testKey = "sk-test-DO-NOT-LEAK-7f3c9a1b2e4d"

const testPolicy = `version: 1
extends: none
sandbox:
  timeouts: {call: 20s, session: 5m}
commands:
  default: deny
  dynamic: deny
  allow: [ls, cat, echo, "true", find, wc, env, sleep, printf, head, python3, seq, grep, yes]
  ask: ["git push"]
  deny:
    - match: "rm -rf /"
      why: never wipe the filesystem root
    - match: curl
      why: no downloads
files:
  read: {allow: ["**"], deny: [".env"]}
  write: {allow: ["**"], deny: [".git/**", "secret/**"]}
`

func testPolicyT(t testing.TB) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("test-policy.yaml", []byte(testPolicy))
	if err != nil {
		t.Fatalf("test policy: %v", err)
	}
	return p
}

// openAudit opens a real audit writer on a temp file that redacts testKey.
func openAudit(t testing.TB) (*audit.Writer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(path, audit.Options{Secrets: []string{testKey}})
	if err != nil {
		t.Fatalf("audit.Open: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w, path
}

func readAudit(t testing.TB, path string) []audit.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := audit.ReadAll(f)
	if err != nil {
		t.Fatalf("reading audit log: %v", err)
	}
	return recs
}

func events(recs []audit.Record, ev string) []audit.Record {
	var out []audit.Record
	for _, r := range recs {
		if r.Event == ev {
			out = append(out, r)
		}
	}
	return out
}

// fakeSession is a sandbox.Session at the seam: commands are answered by
// exec, files live in a map. Before every action it checks that the audit
// log already holds the decision record of the call (fsynced before the
// action).
type fakeSession struct {
	t         testing.TB
	auditPath string
	exec      func(ctx context.Context, cmd string) (sandbox.ExecResult, error)

	mu    sync.Mutex
	cmds  []string
	files map[string][]byte
	reads []sandbox.ReadRequest
}

var _ sandbox.Session = (*fakeSession)(nil)

func newFake(t testing.TB, auditPath string) *fakeSession {
	return &fakeSession{t: t, auditPath: auditPath, files: map[string][]byte{}}
}

func (f *fakeSession) ID() string { return "fake-session" }
func (f *fakeSession) Info() sandbox.Info {
	return sandbox.Info{SessionID: "fake-session", ContainerID: "c0ffee", Image: "agentbox/base:latest", ImageID: "sha256:abc"}
}
func (f *fakeSession) Close(context.Context) error { return nil }

func (f *fakeSession) checkAudited(what string) {
	if f.auditPath == "" {
		return
	}
	data, err := os.ReadFile(f.auditPath)
	if err != nil {
		f.t.Errorf("reading audit log before %s: %v", what, err)
		return
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	last := lines[len(lines)-1]
	ran := strings.Contains(last, `"decision":"allow"`) || strings.Contains(last, `"decided_by":"learn"`) // a learning run's would_ask/would_deny
	if !strings.Contains(last, `"phase":"decision"`) || !ran {
		f.t.Errorf("%s ran but the last audit line is not its allow (or learning) decision: %s", what, last)
	}
}

func (f *fakeSession) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	f.checkAudited("exec " + req.Command)
	f.mu.Lock()
	f.cmds = append(f.cmds, req.Command)
	f.mu.Unlock()
	if f.exec != nil {
		return f.exec(ctx, req.Command)
	}
	out := []byte("ran: " + req.Command + "\n")
	return execResult(0, out), nil
}

func execResult(code int, out []byte) sandbox.ExecResult {
	sum := sha256.Sum256(out)
	return sandbox.ExecResult{ExitCode: code, Output: out, OutputBytes: int64(len(out)), OutputSHA: hex.EncodeToString(sum[:]), Duration: time.Millisecond, DurationMS: 1}
}

func (f *fakeSession) ReadFile(ctx context.Context, req sandbox.ReadRequest) (sandbox.ReadResult, error) {
	f.checkAudited("read " + req.Path)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, req)
	if req.Path == "link-to-env" {
		return sandbox.ReadResult{}, &sandbox.FileError{Msg: "denied", Resolved: ".env", Rule: "files.read.deny[0]", Denied: true}
	}
	b, ok := f.files[req.Path]
	if !ok {
		return sandbox.ReadResult{}, &sandbox.FileError{Msg: "read_file: " + req.Path + ": no such file"}
	}
	size := int64(len(b))
	b = b[min(req.Offset, size):]
	if req.Limit > 0 && int64(len(b)) > req.Limit {
		b = b[:req.Limit]
	}
	sum := sha256.Sum256(b)
	return sandbox.ReadResult{Content: b, Size: size, Resolved: req.Path, SHA256: hex.EncodeToString(sum[:])}, nil
}

func (f *fakeSession) WriteFile(ctx context.Context, req sandbox.WriteRequest) (sandbox.WriteResult, error) {
	f.checkAudited("write " + req.Path)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[req.Path] = append([]byte(nil), req.Content...)
	sum := sha256.Sum256(req.Content)
	return sandbox.WriteResult{Resolved: req.Path, Bytes: int64(len(req.Content)), SHA256: hex.EncodeToString(sum[:])}, nil
}

func (f *fakeSession) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cmds...)
}

// newTools wires a fake session, the test policy and a real audit log.
func newTools(t testing.TB) (*agent.Tools, *fakeSession, string) {
	t.Helper()
	w, path := openAudit(t)
	fs := newFake(t, path)
	return &agent.Tools{Policy: testPolicyT(t), Session: fs, Audit: w, CallTimeout: 5 * time.Second,
		Redact: audit.Redactor(audit.Options{Secrets: []string{testKey}})}, fs, path
}

func script(t testing.TB, y string) *agent.Scripted {
	t.Helper()
	s, err := agent.ParseScript("test", []byte(y))
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	return agent.NewScripted("test", s)
}

// run runs cfg in a session around its tools (session.Wrap): the session
// writes session_start and session_end around the model loop, lists the
// files changed and reports the end to cfg.Events, as for agentbox run.
func run(ctx context.Context, cfg agent.RunConfig) (agent.Result, error) {
	s := session.Wrap(cfg.Tools, cfg.Start, session.Options{
		Sandbox: sandbox.Config{Workspace: cfg.Workspace}, Mode: sandbox.WorkspaceRW,
		Record: session.Record{PolicyPath: "test-policy.yaml", PolicySHA256: "abc", Version: "test"}})
	res, _, err := session.Run(ctx, s, cfg)
	return res, err
}
