package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// testPolicy: a short call timeout, an ask rule (touch), a deny rule
// (sudo), a read-denied file (.env).
const testPolicy = `version: 1
extends: none
sandbox:
  timeouts: {call: 3s}
commands:
  default: deny
  allow: [echo, cat, sleep, ls, "false"]
  ask: [touch]
  deny:
    - match: sudo
      why: no privilege escalation
files:
  read: {allow: ["**"], deny: [".env"]}
  write: {allow: ["**"], deny: [".envrc"]}
`

// server is one `agentbox mcp` the test runs: its workspace, policy and
// audit log.
type server struct {
	ws, policy, audit, state string
	args                     []string
}

func newServer(t testing.TB, args ...string) *server {
	t.Helper()
	return newServerWith(t, testPolicy, args...)
}

// newServerWith is newServer with another policy.
func newServerWith(t testing.TB, policyText string, args ...string) *server {
	t.Helper()
	testutil.RequireDocker(t)
	dir := t.TempDir()
	s := &server{ws: filepath.Join(dir, "ws"), policy: filepath.Join(dir, "policy.yaml"), audit: filepath.Join(dir, "audit.jsonl"), state: filepath.Join(dir, "state"), args: args}
	if err := os.Mkdir(s.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.policy, []byte(policyText), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.ws, ".env"), []byte("TOKEN=hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// cmd is the server's command line (not started).
func (s *server) cmd(t testing.TB) *exec.Cmd {
	t.Helper()
	args := append([]string{"mcp", "--workspace", s.ws, "--policy", s.policy, "--audit", s.audit}, s.args...)
	cmd := exec.Command(testutil.Binary(t), args...)
	cmd.Env = []string{"HOME=" + s.state, "XDG_STATE_HOME=" + s.state, "PATH=" + os.Getenv("PATH"), "NO_COLOR=1", testutil.ManifestEnv()}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		cmd.Env = append(cmd.Env, "DOCKER_HOST="+h)
	}
	return cmd
}

// connect runs the server under the SDK's client.
func (s *server) connect(t *testing.T, opts *sdk.ClientOptions, sopts *sdk.ClientSessionOptions) *sdk.ClientSession {
	t.Helper()
	cmd := s.cmd(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "agentbox-test-client", Version: "9.8.7"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, sopts)
	if err != nil {
		t.Fatalf("connecting to agentbox mcp: %v\nstderr: %s", err, stderr.String())
	}
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("agentbox mcp stderr:\n%s", stderr.String())
		}
	})
	return cs
}

// call calls a tool and returns its text and isError.
func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: protocol error %v (want a tool result)", tool, args, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// records reads the audit log.
func (s *server) records(t *testing.T) []audit.Record {
	t.Helper()
	f, err := os.Open(s.audit)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// waitFor polls the audit log until a record satisfies ok.
func (s *server) waitFor(t *testing.T, what string, ok func(audit.Record) bool) audit.Record {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for _, r := range s.records(t) {
			if ok(r) {
				return r
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no audit record: %s", what)
	return audit.Record{}
}

// verify runs `agentbox audit verify` on the log.
func (s *server) verify(t *testing.T) {
	t.Helper()
	out, err := exec.Command(testutil.Binary(t), "audit", "verify", s.audit).CombinedOutput()
	if err != nil {
		t.Fatalf("audit verify: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "never ended") {
		t.Errorf("audit verify: a session never ended:\n%s", out)
	}
}

// containers lists the containers of session id (any state).
func containers(t *testing.T, id string) string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=agentbox.session="+id).CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// waitGone polls until session id has no container.
func waitGone(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for containers(t, id) != "" {
		if time.Now().After(deadline) {
			t.Fatalf("container of session %s still there after a minute: %s", id, containers(t, id))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sessionOf is the session id of the log's (first) session_start.
func (s *server) sessionOf(t *testing.T) string {
	t.Helper()
	return s.waitFor(t, "session_start", func(r audit.Record) bool { return r.Event == audit.EventSessionStart }).Session
}
