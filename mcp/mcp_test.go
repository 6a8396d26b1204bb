package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPTools runs the real binary under the SDK's client: initialize,
// the tool list (the registry's schemas and descriptions), each tool, a
// denial, a refused file, a timeout, an ask the client cannot answer;
// then the container is gone and the log verifies.
func TestMCPTools(t *testing.T) {
	s := newServer(t)
	// 2025-06-18: what most MCP clients speak today.
	cs := s.connect(t, nil, &sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if got := cs.InitializeResult().ServerInfo; got == nil || got.Name != "agentbox" {
		t.Errorf("server info: %+v", got)
	}

	// The tool list is the registry's.
	p, err := policy.Load(s.policy)
	if err != nil {
		t.Fatal(err)
	}
	want := agent.Definitions(agent.ToolInfo{CallTimeout: p.Sandbox.CallTimeout, CallTimeoutMax: p.Sandbox.CallTimeoutMax, OutputCap: int(p.Sandbox.OutputMaxBytes),
		Network: p.Sandbox.Network, WorkspaceMode: sandbox.WorkspaceRW})
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != len(want) {
		t.Fatalf("tools: got %d, want %d", len(list.Tools), len(want))
	}
	for i, w := range want {
		g := list.Tools[i]
		var ws any
		_ = json.Unmarshal(w.Function.Parameters.(json.RawMessage), &ws)
		gb, _ := json.Marshal(g.InputSchema)
		var gs any
		_ = json.Unmarshal(gb, &gs)
		if g.Name != w.Function.Name || g.Description != w.Function.Description || !reflect.DeepEqual(gs, ws) {
			t.Errorf("tool %d:\n got %s %q %s\nwant %s %q %s", i, g.Name, g.Description, gb, w.Function.Name, w.Function.Description, w.Function.Parameters)
		}
	}

	// --start initialize (the default): the sandbox runs before any call.
	if id := s.sessionOf(t); containers(t, id) == "" {
		t.Error("no sandbox after initialize")
	}

	// Each tool.
	if text, isErr := call(t, cs, "write_file", map[string]any{"path": "hello.txt", "content": "hi from mcp\n"}); isErr {
		t.Fatalf("write_file: %s", text)
	}
	if b, _ := os.ReadFile(filepath.Join(s.ws, "hello.txt")); string(b) != "hi from mcp\n" {
		t.Errorf("write_file did not reach the workspace: %q", b)
	}
	if text, isErr := call(t, cs, "read_file", map[string]any{"path": "hello.txt"}); isErr || !strings.Contains(text, "hi from mcp") {
		t.Errorf("read_file: %v %q", isErr, text)
	}
	if text, isErr := call(t, cs, "execute_bash", map[string]any{"command": "cat hello.txt; echo $((6*7))"}); isErr || !strings.Contains(text, "hi from mcp\n42") || !strings.Contains(text, "exit code: 0") {
		t.Errorf("execute_bash: %v %q", isErr, text)
	}
	// A command that fails is a result, not an error of the tool.
	if text, isErr := call(t, cs, "execute_bash", map[string]any{"command": "false"}); isErr || !strings.Contains(text, "exit code: 1") {
		t.Errorf("false: %v %q", isErr, text)
	}

	// What the pipeline refuses comes back as isError with the reason.
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"execute_bash", map[string]any{"command": "sudo ls"}, "no privilege escalation"},
		{"execute_bash", map[string]any{"command": "curl example.com"}, "denied by policy"},
		{"read_file", map[string]any{"path": ".env"}, "denied"},
		{"write_file", map[string]any{"path": ".envrc", "content": "x"}, "denied"},
		{"execute_bash", map[string]any{"command": "touch asked.txt"}, "needs approval"},
		{"execute_bash", map[string]any{"cmd": "ls"}, "invalid arguments"},
		{"read_file", map[string]any{"path": "missing.txt"}, "read_file failed"},
		{"execute_bash", map[string]any{"command": "echo start; sleep 30"}, "timed out after 3s"},
	} {
		text, isErr := call(t, cs, c.tool, c.args)
		if !isErr || !strings.Contains(text, c.want) {
			t.Errorf("%s %v: isError %v, text %q; want isError and %q", c.tool, c.args, isErr, text, c.want)
		}
		if strings.Contains(text, "hunter2") {
			t.Errorf("%s %v: the secret leaked: %q", c.tool, c.args, text)
		}
	}
	if _, err := os.Stat(filepath.Join(s.ws, "asked.txt")); err == nil {
		t.Error("an ask nobody answered ran")
	}

	id := s.sessionOf(t)
	if containers(t, id) == "" {
		t.Fatal("no container while the connection is open")
	}
	_ = cs.Close() // closes stdin; the server ends
	waitGone(t, id)
	s.waitFor(t, "session_end", func(r audit.Record) bool { return r.Event == audit.EventSessionEnd && r.Status == agent.StatusOK })
	s.verify(t)

	start := s.waitFor(t, "session_start", func(r audit.Record) bool { return r.Event == audit.EventSessionStart })
	if !strings.Contains(start.Model, "agentbox-test-client 9.8.7") || start.ContainerID == "" {
		t.Errorf("session_start does not name the client: %+v", start)
	}
	appr := s.waitFor(t, "approval", func(r audit.Record) bool { return r.Event == audit.EventApproval })
	if appr.Decision != "deny" || appr.DecidedBy != audit.DecidedByNoTerminal {
		t.Errorf("approval without elicitation: %+v", appr)
	}
}

// TestMCPApproveAllowFlag: a client that cannot be asked gets the
// --approve answer, decided_by flag. The sandbox starts with the first
// call: none before it.
func TestMCPApproveAllowFlag(t *testing.T) {
	s := newServer(t, "--approve", "allow", "--start", "first-call")
	cs := s.connect(t, nil, nil)
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if recs := s.records(t); len(recs) != 0 {
		t.Errorf("--start first-call: a session began before any call: %+v", recs)
	}
	if text, isErr := call(t, cs, "execute_bash", map[string]any{"command": "touch flagged.txt"}); isErr {
		t.Fatalf("touch with --approve allow: %s", text)
	}
	if _, err := os.Stat(filepath.Join(s.ws, "flagged.txt")); err != nil {
		t.Error("the approved call did not run")
	}
	appr := s.waitFor(t, "approval", func(r audit.Record) bool { return r.Event == audit.EventApproval })
	if appr.Decision != "allow" || appr.DecidedBy != audit.DecidedByFlag {
		t.Errorf("approval: %+v", appr)
	}
	id := s.sessionOf(t)
	_ = cs.Close()
	waitGone(t, id)
	s.verify(t)
}

// TestMCPElicitation: the client answers the policy's ask (allow and
// deny), on the stateless protocol (input requests) and on the
// 2025-11-25 one (elicitation/create while the call waits).
func TestMCPElicitation(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		name := version
		if name == "" {
			name = "latest"
		}
		t.Run(name, func(t *testing.T) {
			s := newServer(t)
			var asked []string
			opts := &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked = append(asked, req.Params.Message)
				if strings.Contains(req.Params.Message, "yes.txt") {
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				}
				return &sdk.ElicitResult{Action: "decline"}, nil
			}}
			cs := s.connect(t, opts, &sdk.ClientSessionOptions{ProtocolVersion: version})
			if text, isErr := call(t, cs, "execute_bash", map[string]any{"command": "touch yes.txt"}); isErr {
				t.Errorf("approved call: %s", text)
			}
			text, isErr := call(t, cs, "execute_bash", map[string]any{"command": "touch no.txt"})
			if !isErr || !strings.Contains(text, "the user declined") {
				t.Errorf("declined call: isError %v %q", isErr, text)
			}
			if _, err := os.Stat(filepath.Join(s.ws, "yes.txt")); err != nil {
				t.Error("the approved call did not run")
			}
			if _, err := os.Stat(filepath.Join(s.ws, "no.txt")); err == nil {
				t.Error("the declined call ran")
			}
			if len(asked) != 2 || !strings.Contains(asked[0], "commands.ask[0]") {
				t.Errorf("questions: %q", asked)
			}
			id := s.sessionOf(t)
			_ = cs.Close()
			waitGone(t, id)
			s.verify(t)
			var got []string
			for _, r := range s.records(t) {
				if r.Event == audit.EventApproval {
					got = append(got, r.Decision+"/"+r.DecidedBy)
				}
			}
			// The approved call's program, stopped at exec time under the
			// same ask rule, runs on the call's approval (not asked again).
			if strings.Join(got, ",") != "allow/user,allow/call-approval,deny/user" {
				t.Errorf("approvals: %v", got)
			}
		})
	}
}
