package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// longPolicy lets a call run for minutes: whatever ends it in these
// tests is the end of the connection, not the call timeout.
var longPolicy = strings.Replace(testPolicy, "call: 3s", "call: 10m", 1)

// The helper client: the test binary re-run with this variable connects to
// agentbox mcp (the command line in AGENTBOX_MCP_TEST_ARGS) and calls
// sleep 300; the test kills it with SIGKILL mid-call.
const helperEnv = "AGENTBOX_MCP_TEST_CLIENT"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperClient())
	}
	os.Exit(m.Run())
}

func helperClient() int {
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv("AGENTBOX_MCP_TEST_ARGS")), &args); err != nil || len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: bad AGENTBOX_MCP_TEST_ARGS:", err)
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "doomed-client", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "execute_bash", Arguments: map[string]any{"command": "sleep 300"}})
	fmt.Fprintln(os.Stderr, "helper: the call returned:", err)
	return 1
}

// waitSleeping waits until the sleep 300 call was decided (it runs).
func (s *server) waitSleeping(t *testing.T) string {
	t.Helper()
	r := s.waitFor(t, "the sleep call's decision", func(r audit.Record) bool {
		return r.Event == audit.EventToolCall && r.Phase == audit.PhaseDecision && r.Args["command"] == "sleep 300"
	})
	if containers(t, r.Session) == "" {
		t.Fatal("no container for the running call")
	}
	return r.Session
}

// ended checks the session's end: its container removed, session_end
// recorded as interrupted, the log intact.
func (s *server) ended(t *testing.T, id string) {
	t.Helper()
	waitGone(t, id)
	s.waitFor(t, "session_end", func(r audit.Record) bool {
		return r.Event == audit.EventSessionEnd && r.Session == id && r.Status == agent.StatusInterrupted
	})
	s.verify(t)
}

// TestMCPClientKilledMidCall: the client process is killed (SIGKILL)
// while a call runs: agentbox sees its stdin close, kills the call,
// removes the container and ends the session in the log.
func TestMCPClientKilledMidCall(t *testing.T) {
	s := newServerWith(t, longPolicy)
	server := s.cmd(t)
	helper := exec.Command(os.Args[0], "-test.run=^$")
	args, _ := json.Marshal(server.Args)
	helper.Env = append(os.Environ(), helperEnv+"=1", "AGENTBOX_MCP_TEST_ARGS="+string(args))
	helper.Env = append(helper.Env, server.Env...)
	var stderr strings.Builder
	helper.Stderr = &stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = helper.Process.Kill(); _ = helper.Wait() }()
	id := s.waitSleeping(t)
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	s.ended(t, id)
	if t.Failed() {
		t.Logf("helper and server stderr:\n%s", stderr.String())
	}
}

// pipedServer runs agentbox mcp with the test holding both ends of its
// stdio, under the SDK's client.
func pipedServer(t *testing.T, s *server) (*exec.Cmd, io.WriteCloser, *sdk.ClientSession, *strings.Builder) {
	t.Helper()
	cmd := s.cmd(t)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	client := sdk.NewClient(&sdk.Implementation{Name: "piped-client", Version: "2"}, nil)
	cs, err := client.Connect(t.Context(), &sdk.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	return cmd, stdin, cs, stderr
}

// exitCode waits (with a deadline) for cmd and returns its exit code.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("agentbox mcp: %v", err)
		}
		return 0
	case <-time.After(time.Minute):
		t.Fatal("agentbox mcp did not exit within a minute")
		return -1
	}
}

// TestMCPStdinClosedMidCall: the client closes agentbox's stdin while a
// call runs (it crashed, or just went away).
func TestMCPStdinClosedMidCall(t *testing.T) {
	s := newServerWith(t, longPolicy)
	cmd, stdin, cs, stderr := pipedServer(t, s)
	go func() {
		_, _ = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "execute_bash", Arguments: map[string]any{"command": "sleep 300"}})
	}()
	id := s.waitSleeping(t)
	_ = stdin.Close()
	s.ended(t, id)
	if code := exitCode(t, cmd); code != 0 {
		t.Errorf("exit code %d after stdin closed, want 0\n%s", code, stderr)
	}
}

// TestMCPSignalMidCall: SIGTERM, SIGINT or SIGHUP while a call runs: exit
// 128+signal, nothing left, the session ended in the log.
func TestMCPSignalMidCall(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			s := newServerWith(t, longPolicy)
			cmd, _, cs, stderr := pipedServer(t, s)
			go func() {
				_, _ = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "execute_bash", Arguments: map[string]any{"command": "sleep 300"}})
			}()
			id := s.waitSleeping(t)
			_ = cmd.Process.Signal(sig)
			if code := exitCode(t, cmd); code != 128+int(sig) {
				t.Errorf("exit code %d after %v, want %d\n%s", code, sig, 128+int(sig), stderr)
			}
			s.ended(t, id)
		})
	}
}
