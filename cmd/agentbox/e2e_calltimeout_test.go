package main_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/agent/agenttest"
	"github.com/agentbox/agentbox/internal/testutil"
)

// TestCallTimeoutArgument: the model may ask execute_bash for a longer
// timeout (seconds) within the policy's sandbox.timeouts.call_max; more is
// capped at the bound and said; a timed-out call says how to get more
// time. The tool description names the default and the bound.
func TestCallTimeoutArgument(t *testing.T) {
	testutil.RequireDocker(t)
	key := newKey(t)
	srv := agenttest.New(t,
		agenttest.Tools(agenttest.Call{Name: "execute_bash", Args: `{"command":"sleep 2; echo slow-done","timeout":5}`}),
		agenttest.Tools(agenttest.Call{Name: "execute_bash", Args: `{"command":"echo started; sleep 300","timeout":3600}`}),
		agenttest.Tools(agenttest.Bash("echo started; sleep 300")),
		agenttest.Answer("done"),
	)
	srv.Key = key
	ws := t.TempDir()
	pol := writeFile(t, filepath.Join(t.TempDir(), "p.yaml"),
		"version: 1\nextends: none\nsandbox:\n  timeouts: {call: 1s, call_max: 5s}\ncommands:\n  allow: [sleep, echo]\n", 0o644)
	r := agentbox(t, modelEnv(srv, key), "run", "--no-memory", "--approve", "deny", "--policy", pol, "--workspace", ws,
		"--audit", filepath.Join(t.TempDir(), "a.jsonl"), "wait")
	if r.code != 0 {
		t.Fatalf("run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("the server saw %d requests, want 4:\n%s", len(reqs), r.stderr)
	}
	var desc string
	for _, tl := range reqs[0].Request.Tools {
		if tl.Function != nil && tl.Function.Name == "execute_bash" {
			desc = tl.Function.Description
		}
	}
	if !strings.Contains(desc, `after 1s unless you pass "timeout" (seconds, at most 5)`) || !strings.Contains(string(reqs[0].Body), `"timeout":{"type":"integer"`) {
		t.Errorf("execute_bash's description or schema does not offer the timeout:\n%s\n%s", desc, reqs[0].Body)
	}
	result := func(i int) string {
		m := reqs[i].Request.Messages
		return m[len(m)-1].Content
	}
	if got := result(1); !strings.HasPrefix(got, "exit code: 0") || !strings.Contains(got, "slow-done") {
		t.Errorf("a call with timeout 5 ran past the 1s default: %q", got)
	}
	if got := result(2); !strings.Contains(got, "[timeout capped at 5s, the policy's sandbox.timeouts.call_max]") ||
		!strings.Contains(got, "timed out after 5s") || !strings.Contains(got, "the most the policy allows (sandbox.timeouts.call_max)") {
		t.Errorf("a timeout above call_max: %q", got)
	}
	if got := result(3); !strings.Contains(got, "timed out after 1s") || !strings.Contains(got, `call again with "timeout": 2 (seconds; at most 5`) {
		t.Errorf("a timed-out call does not say how to raise the limit: %q", got)
	}
}

// Under the built-in default policy (no policy file where it starts) the
// model is told the default call timeout, 2 minutes, and the bound on the
// timeout it may ask for, 10 minutes: execute_bash's description as an
// MCP client lists it from the real binary (no sandbox needed for that).
func TestDefaultCallTimeoutsInToolDescription(t *testing.T) {
	testutil.RequireDocker(t) // agentbox mcp reaches the engine before it lists its tools
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testutil.Binary(t), "mcp", "--start", "first-call", "--workspace", ws, "--audit", filepath.Join(dir, "a.jsonl"))
	cmd.Dir, cmd.Env = dir, baseEnv(t)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	defer stdin.Close()
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	var desc string
	for desc == "" && sc.Scan() {
		var m struct {
			ID     int `json:"id"`
			Result struct {
				Tools []struct{ Name, Description string } `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line is not JSON-RPC: %q", sc.Text())
		}
		for _, tl := range m.Result.Tools {
			if tl.Name == "execute_bash" {
				desc = tl.Description
			}
		}
	}
	if !strings.Contains(desc, `killed with all its processes after 2m0s unless you pass "timeout" (seconds, at most 600)`) {
		t.Errorf("execute_bash's description under the built-in default does not state the 2-minute default and the 10-minute bound:\n%q\n%s", desc, stderr.String())
	}
}
