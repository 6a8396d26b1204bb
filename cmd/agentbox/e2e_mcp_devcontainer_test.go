package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpDevcontainerCall connects a real MCP client to `agentbox mcp
// --devcontainer` on ws and makes one execute_bash call.
func mcpDevcontainerCall(t *testing.T, ws, pol, log, command string) (*sdk.CallToolResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(testutil.Binary(t), "mcp", "--devcontainer", "--workspace", ws, "--policy", pol, "--audit", log)
	cmd.Env = baseEnv(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "devcontainer-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting: %v\n%s", err, stderr.String())
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "execute_bash", Arguments: map[string]any{"command": command}})
	if err != nil {
		t.Fatalf("call: %v\n%s", err, stderr.String())
	}
	if err := cs.Close(); err != nil {
		t.Logf("closing: %v", err)
	}
	return res, stderr.String()
}

func resultText(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// `agentbox mcp --devcontainer`, through a real MCP client: the
// devcontainer's containerEnv is in the sandbox and its postCreateCommand
// runs first, an ordinary tool call (setup_1) in the audit log before the
// client's call; one that fails refuses every call with the reason; a
// refused field stops the server before anything starts, naming the field,
// with nothing on stdout.
func TestMCPDevcontainer(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, ".devcontainer", "devcontainer.json"), `{
  "image": "agentbox/base:latest",
  "containerEnv": {"DEVC_GREETING": "hello-mcp"},
  "postCreateCommand": "echo created > /workspace/post-create.txt",
}`, 0o644)
	pol := writeFile(t, filepath.Join(t.TempDir(), "policy.yaml"), "version: 1\nextends: none\ncommands:\n  default: allow\n  dynamic: allow\nfiles:\n  write:\n    allow: [\"/workspace/**\"]\n", 0o644)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	res, stderr := mcpDevcontainerCall(t, ws, pol, log, `echo "$DEVC_GREETING"; cat /workspace/post-create.txt`)
	if text := resultText(res); res.IsError || !strings.Contains(text, "hello-mcp\ncreated") {
		t.Fatalf("call: isError %v %q\n%s", res.IsError, text, stderr)
	}
	var calls []string
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event == "tool_call" && l.rec.Phase == "decision" {
			cmd, _ := l.rec.Args["command"].(string)
			calls = append(calls, l.rec.CallID+": "+cmd)
		}
	}
	if len(calls) != 2 || calls[0] != "setup_1: echo created > /workspace/post-create.txt" || !strings.HasPrefix(calls[1], "mcp_1: ") {
		t.Errorf("tool calls in the audit log: %q; want the postCreateCommand as setup_1, then the client's", calls)
	}
	if r := agentbox(t, nil, "audit", "verify", log); r.code != 0 {
		t.Errorf("audit verify: %d %s", r.code, r.stderr)
	}

	// A lifecycle command that fails: the client's call does not run.
	writeFile(t, filepath.Join(ws, ".devcontainer", "devcontainer.json"), `{"image": "agentbox/base:latest", "postCreateCommand": "exit 7"}`, 0o644)
	res, stderr = mcpDevcontainerCall(t, ws, pol, log, "touch /workspace/ran.txt")
	if text := resultText(res); !res.IsError || !strings.Contains(text, "lifecycle commands failed") || !strings.Contains(text, "exited 7") {
		t.Errorf("call after a failed postCreateCommand: isError %v %q\n%s", res.IsError, text, stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran.txt")); err == nil {
		t.Error("the client's call ran although the devcontainer's setup failed")
	}

	// Fields that would loosen the sandbox are refused by name.
	for field, doc := range map[string]string{
		"privileged": `{"image": "agentbox/base:latest", "privileged": true}`,
		"runArgs":    `{"image": "agentbox/base:latest", "runArgs": ["--cap-add=SYS_ADMIN"]}`,
		"mounts":     `{"image": "agentbox/base:latest", "mounts": ["source=/,target=/host,type=bind"]}`,
	} {
		writeFile(t, filepath.Join(ws, ".devcontainer", "devcontainer.json"), doc, 0o644)
		r := agentbox(t, nil, "mcp", "--devcontainer", "--workspace", ws, "--policy", pol, "--audit", log)
		if r.code != 2 || !strings.Contains(r.stderr, field+":") || r.stdout != "" {
			t.Errorf("%s: code %d stdout %q stderr %q; want 2 naming the field", field, r.code, r.stdout, r.stderr)
		}
	}
}
