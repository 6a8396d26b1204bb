package main_test

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
	cmd := exec.Command(testutil.Binary(t), "mcp", "--workspace", ws, "--audit", filepath.Join(t.TempDir(), "a.jsonl"))
	cmd.Env = baseEnv(t)
	// Stdin stays open until every answer is in: replies are read as they come.
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte(in)); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	answers := map[float64]map[string]any{}
	for len(answers) < 5 && sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Fatalf("stdout line is not JSON-RPC: %q (%v)", sc.Text(), err)
		}
		if id, ok := m["id"].(float64); ok {
			answers[id] = m
		}
	}
	_ = stdin.Close()
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Errorf("stdout line is not JSON-RPC: %q", sc.Text())
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agentbox mcp: %v\n%s", err, stderr.String())
	}
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
