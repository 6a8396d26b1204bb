package main_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestMCPUsage: bad flags are usage errors (exit 2) and print nothing on
// stdout, which belongs to the protocol.
func TestMCPUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"mcp", "--approve", "prompt"}, "want deny or allow"},
		{[]string{"mcp", "--network", "wide"}, "none, proxy or open"},
		{[]string{"mcp", "--start", "later"}, "initialize or first-call"},
		{[]string{"mcp", "extra"}, "no arguments"},
		{[]string{"mcp", "--workspace", "/nonexistent/ws"}, "does not exist"},
	} {
		r := agentbox(t, nil, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.msg) || r.stdout != "" {
			t.Errorf("%v: code %d stdout %q stderr %q; want 2, nothing on stdout and %q", c.args, r.code, r.stdout, r.stderr, c.msg)
		}
	}
}

// TestMCPStdoutIsProtocol: raw JSON-RPC over the real binary's stdio:
// every stdout line is a JSON-RPC message, even when a tool call is bad,
// denied or prints a lot.
func TestMCPStdoutIsProtocol(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_bash","arguments":{"command":"ls -laR /usr/share"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_bash","arguments":{"command":"sudo id"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"nope":1}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
	}, "\n") + "\n"
	// Stdin stays open until every answer is in: replies are read as they come.
	p := startRawMCP(t, baseEnv(t), in, "mcp", "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"))
	answers := map[float64]map[string]any{}
	for len(answers) < 5 && p.sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(p.sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Fatalf("stdout line is not JSON-RPC: %q (%v)", p.sc.Text(), err)
		}
		if id, ok := m["id"].(float64); ok {
			answers[id] = m
		}
	}
	p.finish(t, func(line []byte) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Errorf("stdout line is not JSON-RPC: %q", line)
		}
	})
	for id, wantErr := range map[float64]bool{2: false, 3: true, 4: true} {
		res, _ := answers[id]["result"].(map[string]any)
		if res == nil {
			t.Errorf("call %v: no result: %v", id, answers[id])
			continue
		}
		if isErr, _ := res["isError"].(bool); isErr != wantErr {
			t.Errorf("call %v: isError %v, want %v: %v", id, isErr, wantErr, res)
		}
	}
	// An unknown tool is the one protocol error (the SDK's own answer).
	if answers[5]["error"] == nil && answers[5]["result"] == nil {
		t.Errorf("unknown tool: %v", answers[5])
	}
}

// mcpCall starts agentbox with args (an mcp server), has it run one
// execute_bash call and closes it: its stderr, and the call's answer.
func mcpCall(t *testing.T, env []string, command string, args ...string) (stderr, answer string) {
	t.Helper()
	call, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "execute_bash", "arguments": map[string]string{"command": command}}})
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		string(call),
	}, "\n") + "\n"
	p := startRawMCP(t, env, in, args...)
	for p.sc.Scan() {
		if strings.Contains(p.sc.Text(), `"id":2`) {
			answer = p.sc.Text()
			break
		}
	}
	p.finish(t, nil)
	return p.stderr.String(), answer
}

// rawMCP is agentbox started as an MCP server over raw stdio.
type rawMCP struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	sc     *bufio.Scanner // its stdout, a line at a time
	stderr strings.Builder
}

// startRawMCP starts agentbox with args and env and writes in to its
// stdin, which stays open until finish.
func startRawMCP(t *testing.T, env []string, in string, args ...string) *rawMCP {
	t.Helper()
	p := &rawMCP{cmd: exec.Command(testutil.Binary(t), args...)}
	p.cmd.Env = env
	p.stdin, _ = p.cmd.StdinPipe()
	stdout, _ := p.cmd.StdoutPipe()
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.stdin.Write([]byte(in)); err != nil {
		t.Fatal(err)
	}
	p.sc = bufio.NewScanner(stdout)
	p.sc.Buffer(make([]byte, 1<<20), 1<<24)
	return p
}

// finish closes stdin, hands each remaining stdout line to line (when
// not nil) and fails the test unless agentbox then exits 0.
func (p *rawMCP) finish(t *testing.T, line func([]byte)) {
	t.Helper()
	_ = p.stdin.Close()
	for p.sc.Scan() {
		if line != nil {
			line(p.sc.Bytes())
		}
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("agentbox mcp: %v\n%s", err, p.stderr.String())
	}
}

// startInterruptible starts agentbox with args and env; at the test's end
// it is interrupted (SIGINT: it removes its own sandbox) and killed only
// if it has not exited a minute later.
func startInterruptible(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(testutil.Binary(t), args...)
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return cmd
}
