package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
)

func TestCallAllowedRecordsDecisionThenResult(t *testing.T) {
	tools, fs, path := newTools(t)
	o := tools.Call(context.Background(), "c1", "execute_bash", `{"command":"ls -la"}`)
	if o.Err != nil || o.Denied || o.Invalid || !o.Ran {
		t.Fatalf("outcome = %+v", o)
	}
	if o.Decision != "allow" || o.Rule == "" || o.DecidedBy != audit.DecidedByPolicy {
		t.Errorf("decision = %q rule %q by %q", o.Decision, o.Rule, o.DecidedBy)
	}
	if !strings.HasPrefix(o.Text, "exit code: 0\nran: ls -la") {
		t.Errorf("text = %q", o.Text)
	}
	if got := fs.commands(); len(got) != 1 || got[0] != "ls -la" {
		t.Errorf("commands = %q", got)
	}
	recs := events(readAudit(t, path), audit.EventToolCall)
	if len(recs) != 2 || recs[0].Phase != audit.PhaseDecision || recs[1].Phase != audit.PhaseResult {
		t.Fatalf("records = %+v", recs)
	}
	if recs[0].Args["command"] != "ls -la" || recs[0].CallID != "c1" || recs[0].Session != "fake-session" {
		t.Errorf("decision record = %+v", recs[0])
	}
	if recs[1].ExitCode == nil || *recs[1].ExitCode != 0 || recs[1].OutputSHA256 == "" || recs[1].OutputPreview == "" {
		t.Errorf("result record = %+v", recs[1])
	}
}

func TestCallBadArgumentsGoBackToTheModel(t *testing.T) {
	cases := []struct{ name, tool, args, want string }{
		{"malformed", "execute_bash", `{"command": "ls`, "not valid"},
		{"array", "execute_bash", `["ls"]`, "must be a JSON object, not an array"},
		{"string", "execute_bash", `"ls"`, "must be a JSON object, not a string"},
		{"null", "execute_bash", `null`, "not null"},
		{"missing", "execute_bash", `{}`, `"command" argument is missing`},
		{"empty command", "execute_bash", `{"command":"  "}`, `is empty`},
		{"unknown field", "execute_bash", `{"command":"ls","cwd":"/"}`, `unknown field "cwd"`},
		{"trailing", "execute_bash", `{"command":"ls"} {}`, "extra data"},
		{"wrong type", "read_file", `{"path": 3}`, "not valid"},
		{"negative offset", "read_file", `{"path":"a","offset":-1}`, "offset"},
		{"write without content", "write_file", `{"path":"a"}`, `"content" argument is missing`},
		{"unknown tool", "rm_rf", `{}`, `no tool named "rm_rf"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tools, fs, path := newTools(t)
			o := tools.Call(context.Background(), "c1", c.tool, c.args)
			if o.Err != nil {
				t.Fatalf("fatal error for a model mistake: %v", o.Err)
			}
			if !o.Invalid || o.Ran || !strings.Contains(o.Text, c.want) {
				t.Errorf("outcome = %+v, want invalid with %q", o, c.want)
			}
			if len(fs.commands()) != 0 {
				t.Errorf("something ran: %q", fs.commands())
			}
			recs := readAudit(t, path)
			if len(recs) != 1 || recs[0].Event != audit.EventError || recs[0].Tool != c.tool {
				t.Errorf("audit = %+v", recs)
			}
		})
	}
}

func TestCallDenied(t *testing.T) {
	tools, fs, path := newTools(t)
	o := tools.Call(context.Background(), "c1", "execute_bash", `{"command":"rm -rf / --no-preserve-root"}`)
	if o.Err != nil || !o.Denied || o.Ran || o.Decision != "deny" {
		t.Fatalf("outcome = %+v", o)
	}
	if !strings.Contains(o.Text, "denied by policy") || !strings.Contains(o.Text, "never wipe the filesystem root") {
		t.Errorf("text = %q", o.Text)
	}
	if len(fs.commands()) != 0 {
		t.Fatalf("denied command ran")
	}
	recs := readAudit(t, path)
	if len(recs) != 1 || recs[0].Decision != "deny" || recs[0].Rule != "commands.deny[0]" || recs[0].DecidedBy != "policy" {
		t.Errorf("audit = %+v", recs)
	}
}

func TestCallAskApprovers(t *testing.T) {
	cases := []struct {
		name     string
		approver agent.Approver
		allow    bool
		by       string
	}{
		{"nil approver denies", nil, false, audit.DecidedByNoTerminal},
		{"deny-all without TTY", agent.DenyAll{}, false, audit.DecidedByNoTerminal},
		{"--approve deny", agent.DenyAll{DecidedBy: audit.DecidedByFlag}, false, audit.DecidedByFlag},
		{"--approve allow", agent.AllowAll{}, true, audit.DecidedByFlag},
		{"user says yes", agent.NewPrompt(strings.NewReader("y\n"), new(strings.Builder)), true, audit.DecidedByUser},
		{"user says no", agent.NewPrompt(strings.NewReader("n\n"), new(strings.Builder)), false, audit.DecidedByUser},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tools, fs, path := newTools(t)
			tools.Approver = c.approver
			o := tools.Call(context.Background(), "c1", "execute_bash", `{"command":"git push origin main"}`)
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			if o.Ran != c.allow || o.Denied == c.allow || o.DecidedBy != c.by {
				t.Errorf("outcome = %+v", o)
			}
			if !c.allow && !strings.Contains(o.Text, "needs approval") {
				t.Errorf("text = %q", o.Text)
			}
			if got := len(fs.commands()); got != map[bool]int{true: 1}[c.allow] {
				t.Errorf("ran %d commands", got)
			}
			recs := readAudit(t, path)
			ap := events(recs, audit.EventApproval)
			if len(ap) != 1 || ap[0].DecidedBy != c.by || ap[0].Rule != "commands.ask[0]" || ap[0].Approver == "" {
				t.Errorf("approval records = %+v", ap)
			}
			dec := events(recs, audit.EventToolCall)[0]
			if dec.DecidedBy != c.by || dec.Decision != map[bool]string{true: "allow", false: "deny"}[c.allow] {
				t.Errorf("decision record = %+v", dec)
			}
		})
	}
}

func TestCallFiles(t *testing.T) {
	tools, fs, path := newTools(t)
	ctx := context.Background()
	o := tools.Call(ctx, "w", "write_file", `{"path":"dir/a.txt","content":"hello\nworld\n"}`)
	if o.Err != nil || !o.Ran || !strings.Contains(o.Text, "wrote 12 bytes to dir/a.txt") {
		t.Fatalf("write: %+v", o)
	}
	o = tools.Call(ctx, "r", "read_file", `{"path":"dir/a.txt","offset":6,"limit":3}`)
	if o.Err != nil || !strings.Contains(o.Text, "(bytes 6-9 of 12):\nwor\n") || !strings.Contains(o.Text, "offset=9") {
		t.Fatalf("read: %+v", o)
	}
	// The executor gets the policy's file rules to re-check the resolved path.
	if r := fs.reads[0].Rules; r == nil || len(r.Deny) != 1 || r.Deny[0] != ".env" {
		t.Errorf("read rules = %+v", r)
	}
	// Policy denial on the path as asked.
	o = tools.Call(ctx, "d", "read_file", `{"path":".env"}`)
	if !o.Denied || o.Ran || o.Err != nil {
		t.Errorf("read .env: %+v", o)
	}
	// Executor denial on the resolved path (a symlink).
	o = tools.Call(ctx, "l", "read_file", `{"path":"link-to-env"}`)
	if !o.Denied || o.Err != nil || !strings.Contains(o.Text, "resolves to .env") || o.Rule != "files.read.deny[0]" {
		t.Errorf("read link: %+v", o)
	}
	// A missing file is the model's problem.
	o = tools.Call(ctx, "m", "read_file", `{"path":"nope"}`)
	if o.Err != nil || o.Denied || !strings.Contains(o.Text, "no such file") {
		t.Errorf("read missing: %+v", o)
	}
	// Binary content is not shown.
	fs.files["bin"] = []byte{0x7f, 'E', 'L', 'F', 0, 1}
	o = tools.Call(ctx, "b", "read_file", `{"path":"bin"}`)
	if !strings.Contains(o.Text, "binary file") {
		t.Errorf("read binary: %+v", o)
	}
	recs := readAudit(t, path)
	var results int
	for _, r := range events(recs, audit.EventToolCall) {
		if r.Phase == audit.PhaseResult {
			results++
		}
	}
	if results != 5 { // write, read, link (denied by the executor), missing, binary
		t.Errorf("result records: %d, want 5", results)
	}
}

func TestCallExecutorFailureIsFatal(t *testing.T) {
	tools, fs, _ := newTools(t)
	fs.exec = func(context.Context, string) (sandbox.ExecResult, error) {
		return sandbox.ExecResult{}, fmt.Errorf("%w: the executor exited", sandbox.ErrExecutor)
	}
	o := tools.Call(context.Background(), "c1", "execute_bash", `{"command":"ls"}`)
	if !errors.Is(o.Err, sandbox.ErrExecutor) {
		t.Fatalf("err = %v", o.Err)
	}
}

func TestCallAuditFailureStopsTheAction(t *testing.T) {
	tools, fs, _ := newTools(t)
	tools.Audit = failingLog{}
	o := tools.Call(context.Background(), "c1", "execute_bash", `{"command":"ls"}`)
	if o.Err == nil || len(fs.commands()) != 0 {
		t.Fatalf("err = %v, commands %q", o.Err, fs.commands())
	}
}

type failingLog struct{}

func (failingLog) Append(*audit.Record) error { return errors.New("disk full") }

func TestCallOutputCapAndRedaction(t *testing.T) {
	tools, fs, _ := newTools(t)
	tools.OutputCap = 1024
	fs.exec = func(context.Context, string) (sandbox.ExecResult, error) {
		out := strings.Repeat("x", 5000) + " key=" + testKey + " " + strings.Repeat("y", 5000)
		return execResult(0, []byte(out)), nil
	}
	o := tools.Call(context.Background(), "c1", "execute_bash", `{"command":"ls"}`)
	if len(o.Text) > 1024+512 || !strings.Contains(o.Text, "cut by agentbox") {
		t.Errorf("text not capped: %d bytes", len(o.Text))
	}
	fs.exec = func(context.Context, string) (sandbox.ExecResult, error) {
		return execResult(0, []byte("key="+testKey+"\n")), nil
	}
	o = tools.Call(context.Background(), "c2", "execute_bash", `{"command":"ls"}`)
	if strings.Contains(o.Text, testKey) || strings.Contains(o.Preview, testKey) || !strings.Contains(o.Text, audit.Redacted) {
		t.Errorf("secret leaked: %q", o.Text)
	}
}

func TestDefinitionsSchemas(t *testing.T) {
	tools, _, _ := newTools(t)
	defs := tools.Definitions()
	if len(defs) != 3 {
		t.Fatalf("%d tools", len(defs))
	}
	for _, d := range defs {
		raw, _ := json.Marshal(d.Function.Parameters)
		var s struct {
			Type                 string         `json:"type"`
			Properties           map[string]any `json:"properties"`
			Required             []string       `json:"required"`
			AdditionalProperties *bool          `json:"additionalProperties"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s: schema is not JSON: %v", d.Function.Name, err)
		}
		if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties || len(s.Required) == 0 {
			t.Errorf("%s: schema %s", d.Function.Name, raw)
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s: required %q not a property", d.Function.Name, r)
			}
		}
		if !strings.Contains(d.Function.Description, "/workspace") || !strings.Contains(d.Function.Description, "no network") {
			t.Errorf("%s: description %q", d.Function.Name, d.Function.Description)
		}
	}
	if !strings.Contains(defs[0].Function.Description, "5s") {
		t.Errorf("bash description lacks the call timeout: %q", defs[0].Function.Description)
	}
}

func TestToolsExec(t *testing.T) {
	tools, fs, _ := newTools(t)
	fs.exec = func(context.Context, string) (sandbox.ExecResult, error) {
		r := execResult(3, []byte(strings.Repeat("z", 40000)+testKey))
		r.TimedOut = true
		return r, nil
	}
	o := tools.Exec(context.Background(), `echo "a b"`)
	if o.Err != nil || o.CallID != "exec" || fs.commands()[0] != `echo "a b"` || o.ExitCode != 3 || !o.TimedOut {
		t.Fatalf("outcome = %+v", o)
	}
	if len(o.Output) < 40000 || strings.Contains(string(o.Output), testKey) {
		t.Errorf("output: %d bytes, key redacted: %v", len(o.Output), !strings.Contains(string(o.Output), testKey))
	}
	if o = tools.Exec(context.Background(), "curl x"); !o.Denied {
		t.Errorf("denied outcome = %+v", o)
	}
}
