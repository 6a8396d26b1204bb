package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// nopSession is a sandbox that succeeds at everything without doing it.
type nopSession struct{}

func (nopSession) ID() string                  { return "0123456789abcdef" }
func (nopSession) Info() sandbox.Info          { return sandbox.Info{} }
func (nopSession) Close(context.Context) error { return nil }
func (nopSession) Exec(context.Context, sandbox.ExecRequest) (sandbox.ExecResult, error) {
	return sandbox.ExecResult{}, nil
}
func (nopSession) ReadFile(context.Context, sandbox.ReadRequest) (sandbox.ReadResult, error) {
	return sandbox.ReadResult{}, nil
}
func (nopSession) WriteFile(context.Context, sandbox.WriteRequest) (sandbox.WriteResult, error) {
	return sandbox.WriteResult{}, nil
}

func mustPolicy(t *testing.T, name, y string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse(name, []byte(y))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

// TestRegistryRoundTrips proves that every registered tool is complete: its
// example parses, the arguments it records map back to the same policy
// action, and a call recorded under a deny-all policy is re-decided by
// `audit replay` under an allow-all policy (a tool replay did not know
// would stay denied and be missing from the changes).
func TestRegistryRoundTrips(t *testing.T) {
	denyAll := mustPolicy(t, "deny.yaml", "version: 1\nextends: none\ncommands: {default: deny, dynamic: deny}\nfiles:\n  read: {allow: [], deny: [\"**\"]}\n  write: {allow: [], deny: [\"**\"]}\n")
	allowAll := mustPolicy(t, "allow.yaml", "version: 1\nextends: none\ncommands: {default: allow, dynamic: allow}\nfiles:\n  read: {allow: [\"**\"]}\n  write: {allow: [\"**\"]}\n")
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tools := &Tools{Policy: denyAll, Session: nopSession{}, Audit: w}
	for _, s := range registry {
		if s.name == "" || s.describe == nil || s.schema == "" || s.parse == nil || s.action == nil || s.example == "" {
			t.Fatalf("tool %q is incomplete: %+v", s.name, s)
		}
		if !json.Valid([]byte(s.schema)) {
			t.Errorf("%s: schema is not JSON", s.name)
		}
		call, err := s.parse([]byte(s.example))
		if err != nil {
			t.Fatalf("%s: example %s: %v", s.name, s.example, err)
		}
		// The arguments as the log stores them (JSON) give the same action.
		b, _ := json.Marshal(call.args)
		var recorded map[string]any
		_ = json.Unmarshal(b, &recorded)
		a, ok := ActionFor(s.name, recorded)
		if !ok || !reflect.DeepEqual(a, call.action) {
			t.Errorf("%s: recorded args %s give action %+v (ok %v), the call decided %+v", s.name, b, a, ok, call.action)
		}
		if o := tools.Call(context.Background(), "call-"+s.name, s.name, s.example); !o.Denied || o.Invalid {
			t.Fatalf("%s under deny-all: %+v", s.name, o)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	changes, err := audit.Replay(f, ReplayDecider{Policy: allowAll})
	if err != nil {
		t.Fatal(err)
	}
	var replayed []string
	for _, c := range changes {
		if c.Old == "deny" && c.New == "allow" {
			replayed = append(replayed, c.Tool)
		}
	}
	if !slices.Equal(replayed, ToolNames()) {
		t.Errorf("audit replay re-decided %v; want every registered tool %v", replayed, ToolNames())
	}
	if _, ok := ActionFor("no_such_tool", map[string]any{"path": "x"}); ok {
		t.Error("an unknown tool has an action")
	}
}
